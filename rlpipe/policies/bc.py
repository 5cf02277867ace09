"""Behaviour cloning: supervised learning of the data set's actions from its observations
(Pomerleau 1991; the baseline of every offline-RL paper).

Networks:
  net     — Discrete actions: logits over the actions (an encoder and a linear head);
            Box actions: a deterministic actor μ(s) (learn.loss="mse") or a Gaussian actor
            N(tanh(mean(s)), std) (learn.loss="gaussian"), both in [-1, 1]^A;
  acting  — the collector's copy of net; refresh() copies net into it.
Box actions are scaled between the env's bounds and [-1, 1] as in SAC/TD3.

One learn step on a batch (obs, action; other keys are not read):
  Discrete:            loss = cross-entropy(logits(s), a)
  Box, loss="mse":     loss = mean ‖μ(s) − a‖² / A         (the deterministic regression)
  Box, loss="gaussian": loss = −mean log N(a; tanh(mean(s)), std)   (negative log-likelihood of
                       a Gaussian that is *clipped*, not tanh-squashed: data actions are scored
                       under the plain Gaussian, its draws are clipped to the box)
Acting is greedy (argmax / μ(s) / the Gaussian's mean); collect_mode takes `eps` from the
pipeline's epsilon schedule and then acts uniformly at random with probability eps (a random
action of the Discrete space or of the Box), so the off-policy pipeline can fine-tune it online.
"""
from __future__ import annotations

import copy
import threading
from typing import Any, Dict, Mapping

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from rlpipe.data import to_torch
from rlpipe.models import DeterministicActor, GaussianActor, QNetwork, batch_rows, obs_as_tensor
from rlpipe.schema import key

from ._common import adam, clone_state, grad_step, hard_update, numpy_rng, resolve_device
from ._continuous import BoxActions
from .base import Policy

__all__ = ["BCPolicy"]

_LOSSES = ("mse", "gaussian")


class BCPolicy(Policy):
    """Behaviour cloning for Discrete or 1-D Box (finite bounds) action spaces."""

    obs_space_types = (gym.spaces.Box, gym.spaces.Dict, gym.spaces.Tuple, gym.spaces.Discrete,
                       gym.spaces.MultiDiscrete)
    action_space_types = (gym.spaces.Discrete, gym.spaces.Box)
    pipeline = "offline"
    explores_with_eps = True  # collect_mode.forward takes eps (uniform random actions)
    space_hint = "BC clones Discrete or 1-D Box actions; flatten other action spaces."
    learn_stats = ("loss", "grad_norm")

    @classmethod
    def config_keys(cls) -> Dict[str, Any]:
        # BC has no canonical settings; these are those of the TD3+BC actor (Fujimoto & Gu 2021):
        # a 256-256 MLP, Adam 3e-4, batch 256.
        return dict(
            device=key("cpu", 'learner device: "cpu", "cuda" or "auto"'),
            seed=key(None, "seeds network init and exploration (None: fresh entropy)"),
            model=dict(
                hidden=key((256, 256), "MLP layers of the policy network"),
                encoders=key({}, 'per Dict key encoder kind, e.g. {"image": "mlp"}'),
                log_std_min=key(-5.0, 'loss="gaussian": the log std is clamped to [min, max]'),
                log_std_max=key(2.0, "(the max of that range)"),
            ),
            learn=dict(
                batch_size=key(256, "rows per learn step (read by the learner middleware)"),
                lr=key(3e-4, "Adam learning rate"),
                loss=key("mse", 'Box actions: "mse" (deterministic) or "gaussian" (NLL)'),
                grad_clip=key(None, "max global grad norm (None: no clipping)"),
            ),
            collect=dict(
                device=key("cpu", "where the acting copy lives"),
            ),
        )

    def __init__(self, cfg: Mapping | None, obs_space: gym.Space, action_space: gym.Space) -> None:
        super().__init__(cfg, obs_space, action_space)
        c = self.cfg
        self._check_cfg()
        self.device = resolve_device(c.device)
        self.collect_device = resolve_device(c.collect.device)
        self.discrete = isinstance(action_space, gym.spaces.Discrete)
        self.box = None if self.discrete else BoxActions(action_space, type(self).__name__)
        with torch.random.fork_rng(devices=[]):  # seed our init without touching global RNG
            if c.seed is not None:
                torch.manual_seed(c.seed)
            self.net = self._make_net(obs_space, action_space).to(self.device)
        self.acting = copy.deepcopy(self.net).to(self.collect_device).requires_grad_(False)
        self._params = list(self.net.parameters())
        self.optimizer = adam(self._params, c.learn.lr, self.device)
        self._rng = numpy_rng(c.seed)
        self._lock = threading.Lock()  # a learn step's weight update vs refresh / eval / state

    def _make_net(self, obs_space: gym.Space, action_space: gym.Space) -> nn.Module:
        m = self.cfg.model
        if self.discrete:  # an encoder and a linear head; its outputs are the logits here
            return QNetwork(obs_space, int(action_space.n), m.hidden, encoders=m.encoders)
        if self.cfg.learn.loss == "gaussian":
            return GaussianActor(obs_space, self.box.dim, m.hidden, m.log_std_min,
                                 m.log_std_max, encoders=m.encoders)
        return DeterministicActor(obs_space, self.box.dim, m.hidden, encoders=m.encoders)

    def _check_cfg(self) -> None:
        c = self.cfg
        if c.learn.loss not in _LOSSES:
            raise ValueError(f"policy.learn.loss must be one of {_LOSSES}, got {c.learn.loss!r}.")
        if c.model.hidden is None:
            raise ValueError("policy.model.hidden must be a tuple of layer sizes (it is None).")
        if c.learn.grad_clip is not None and c.learn.grad_clip <= 0:
            raise ValueError("policy.learn.grad_clip must be > 0 or None, got "
                             f"{c.learn.grad_clip}.")

    # --- acting ----------------------------------------------------------------------------------
    def _greedy(self, net: nn.Module, obs: Any, device: torch.device) -> np.ndarray:
        """argmax of the logits (Discrete, without the space's start) or the unit action."""
        obs_t = obs_as_tensor(obs, device)
        if self.discrete:
            return net(obs_t).argmax(dim=1).cpu().numpy()
        unit = net.deterministic(obs_t) if isinstance(net, GaussianActor) else net(obs_t)
        return unit.cpu().numpy()

    def _to_env(self, action: np.ndarray) -> np.ndarray:
        if self.discrete:
            return action + int(self.action_space.start)
        return self.box.to_env(action)

    def _forward_collect(self, obs: Any, eps: float = 0.0) -> Dict[str, np.ndarray]:
        """Greedy, replaced by a uniformly random action with probability `eps`."""
        with torch.inference_mode():
            action = self._greedy(self.acting, obs, self.collect_device)
        if eps > 0.0:
            rows = batch_rows(obs)
            explore = self._rng.random(rows) < eps
            if self.discrete:
                random_action = self._rng.integers(self.action_space.n, size=rows)
            else:
                random_action = self._rng.uniform(-1.0, 1.0, (rows, self.box.dim))
                random_action = random_action.astype(np.float32)
                explore = explore[:, None]
            action = np.where(explore, random_action, action)
        return {"action": self._to_env(action)}

    def _refresh(self) -> None:
        with self._lock:
            hard_update(self.acting, self.net)

    def _forward_eval(self, obs: Any) -> Dict[str, np.ndarray]:
        with self._lock, torch.inference_mode():
            action = self._greedy(self.net, obs, self.device)
        return {"action": self._to_env(action)}

    # --- learn -----------------------------------------------------------------------------------
    def loss(self, obs: Any, action: torch.Tensor) -> torch.Tensor:
        """The BC loss of a batch (`action` as stored: env units, or the Discrete action)."""
        if self.discrete:
            target = action.long().reshape(-1) - int(self.action_space.start)
            return F.cross_entropy(self.net(obs), target)
        unit = self.box.to_unit(action)
        if isinstance(self.net, GaussianActor):
            return -self.net.log_prob(obs, unit).mean()
        return F.mse_loss(self.net(obs), unit)

    def _forward_learn(self, batch: Mapping[str, Any]) -> Dict[str, Any]:
        missing = [k for k in ("obs", "action") if k not in batch]
        if missing:
            raise KeyError(f"BC learn batch lacks {missing}; it has {sorted(batch)}.")
        b = to_torch({"obs": batch["obs"], "action": batch["action"]}, self.device)
        loss = self.loss(b["obs"], b["action"])
        grad_norm = grad_step(self.optimizer, loss, self._params, self.cfg.learn.grad_clip,
                              norm=True)
        with self._lock:
            self.optimizer.step()
            self.train_iter += 1
        values = torch.stack([loss.detach(), grad_norm.detach().float()]).tolist()
        return dict(zip(("loss", "grad_norm"), values))

    # --- state -----------------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        with self._lock:
            return {
                "net": clone_state(self.net),
                "acting": clone_state(self.acting),
                "optimizer": copy.deepcopy(self.optimizer.state_dict()),
                "train_iter": self.train_iter,
                "rng": copy.deepcopy(self._rng.bit_generator.state),
            }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        missing = {"net", "acting", "optimizer", "train_iter", "rng"} - set(state)
        if missing:
            raise KeyError(f"BCPolicy.load_state_dict: the state lacks {sorted(missing)}; "
                           "it must come from BCPolicy.state_dict().")
        with self._lock:
            self.net.load_state_dict(state["net"])
            self.acting.load_state_dict(state["acting"])
            self.optimizer.load_state_dict(state["optimizer"])
            self.train_iter = int(state["train_iter"])
            self._rng.bit_generator.state = state["rng"]
