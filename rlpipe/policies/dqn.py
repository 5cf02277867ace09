"""DQN (Mnih et al. 2015) with double-Q (van Hasselt et al. 2016), dueling heads, n-step targets,
a hard or Polyak target network, gradient clipping and prioritised-replay weights.

Three copies of the Q network:
  online  — trained by learn_mode.forward;
  target  — a slow copy of online that values the bootstrap;
  acting  — what collect_mode acts with; refresh() copies online into it, so acting never reads
            weights that the learner is writing (async mode trains while the collector steps).

TD target for a transition (obs, action, reward, next_obs):
  y = reward + discount · Q_target(next_obs, a*),
  a* = argmax_a Q_online(next_obs, a)  (double-Q)   or   argmax_a Q_target(next_obs, a),
  discount = batch["discount"] (n-step: gamma**m, 0 after termination)   or
             gamma · (1 − terminated).
Truncation (time limit) does not stop the bootstrap: next_obs is then the true final obs.
Action masks (batch "next_action_mask"): the argmax a* runs over the next state's valid actions
only; acting (greedy and ε-random) picks valid actions only.
"""
from __future__ import annotations

import copy
import threading
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F

from rlpipe.data import to_torch
from rlpipe.models import ObservationShapeError, QNetwork, batch_rows, obs_as_tensor
from rlpipe.schema import key

from ._common import (adam, check_learner_state, check_td_batch, grad_step, hard_update,
                      learner_state, load_learner_state, model_spaces, numpy_rng,
                      resolve_device, soft_update, td_discount)
from ._masks import as_mask, masked_argmax, sample_valid
from .base import Policy

__all__ = ["DQNPolicy"]

# Batch keys a learn step reads (others, such as "index" or "truncated", stay in numpy).
_LEARN_KEYS = ("obs", "action", "reward", "next_obs", "terminated", "discount", "weight",
               "action_mask", "next_action_mask")
_MODULES = ("online", "target", "acting")  # the networks a checkpoint holds
_STAT_NAMES = ("loss", "q_mean", "target_mean", "td_abs_mean", "grad_norm")  # learn's statistics


def _rows(values: list) -> Any:
    """Arrays (or nested dicts of them) of several steps, concatenated along the rows."""
    if isinstance(values[0], Mapping):
        return {k: _rows([v[k] for v in values]) for k in values[0]}
    return np.concatenate([np.asarray(v) for v in values])


class DQNPolicy(Policy):
    """Deep Q-learning for Discrete action spaces (vector or image observations)."""

    obs_space_types = (gym.spaces.Box, gym.spaces.Dict, gym.spaces.Tuple, gym.spaces.Discrete,
                       gym.spaces.MultiDiscrete)
    action_space_types = (gym.spaces.Discrete,)
    pipeline = "off-policy"  # trained by the zoo's off-policy pipeline
    supports_action_mask = True  # collect/eval faces take action_mask=, learn next_action_mask
    mask_space_types = (gym.spaces.Discrete,)
    explores_with_eps = True  # collect_mode.forward takes eps (the pipeline adds eps_greedy_handler)
    learn_stats = _STAT_NAMES
    space_hint = ("DQN picks one of finitely many actions; for continuous control use SAC, TD3 "
                  "or PPO (get_policy('sac'), get_policy('td3'), get_policy('ppo')).")

    @classmethod
    def config_keys(cls) -> Dict[str, Any]:
        return dict(
            device=key("cpu", 'learner device: "cpu", "cuda" or "auto" (cuda when available)'),
            seed=key(None, "seeds network init and exploration (None: from torch's global RNG)"),
            model=dict(
                hidden=key((128, 128), "fully connected layers (after the conv trunk for images)"),
                dueling=key(False, "dueling head: Q = V + A - mean(A)"),
                encoders=key({}, 'per Dict key encoder kind, e.g. {"image": "mlp"}'),
            ),
            learn=dict(
                lr=key(1e-3, "Adam learning rate"),
                batch_size=key(64, "rows per learn step (read by the learner middleware)"),
                gamma=key(0.99, "discount per env step"),
                nstep=key(1, 'n of n-step returns; n > 1 needs batches with "discount"'),
                double_q=key(True, "online net picks the next action, target net values it"),
                target_update_freq=key(500, "hard copy online → target every N learn steps ..."),
                tau=key(None, "... or, when set, Polyak-average with tau every learn step"),
                grad_clip=key(10.0, "max global grad norm (None: no clipping)"),
                huber=key(True, "Huber (smooth L1) TD loss; False: squared error"),
            ),
            collect=dict(
                device=key("cpu", "where the acting copy lives (cheap per-step inference)"),
            ),
        )

    def __init__(self, cfg: Mapping | None, obs_space: Optional[gym.Space] = None,
                 action_space: Optional[gym.Space] = None, *,
                 model: Optional[torch.nn.Module] = None,
                 enable_field: Optional[Sequence[str] | str] = None) -> None:
        """`(cfg, obs_space, action_space)` builds the Q network from `cfg.model`; DI-engine's
        `(cfg, model=QNetwork(...))` trains the given network (the spaces come from it, or
        are checked against it when passed too: it must map a batch of observations to
        [B, action_space.n] Q-values)."""
        if model is not None:
            obs_space, action_space = model_spaces(model, obs_space, action_space, "DQNPolicy")
            if action_space is None:
                n = getattr(model, "n_actions", None)
                if n is None:
                    raise TypeError("DQNPolicy(cfg, model=...): the model records no n_actions; "
                                    "pass DQNPolicy(cfg, obs_space, action_space, model=model)")
                action_space = gym.spaces.Discrete(int(n))
        elif obs_space is None or action_space is None:
            raise TypeError("DQNPolicy needs (cfg, obs_space, action_space) or (cfg, model=...) "
                            "with a model built for the env's spaces, e.g. rlpipe.models.QNetwork")
        super().__init__(cfg, obs_space, action_space, enable_field=enable_field)
        c = self.cfg
        self._check_cfg()
        self.device = resolve_device(c.device)
        self.collect_device = resolve_device(c.collect.device)
        self.n_actions = int(action_space.n)
        self.action_offset = int(action_space.start)  # Discrete(n, start=s): actions s..s+n-1
        self._obs_shape = tuple(getattr(obs_space, "shape", None) or ())
        if model is not None:
            self._check_model(model)
            self.online = model
        else:
            with torch.random.fork_rng(devices=[]):  # seed our init without touching global RNG
                if c.seed is not None:
                    torch.manual_seed(c.seed)
                self.online = QNetwork(obs_space, self.n_actions, c.model.hidden, c.model.dueling,
                                       encoders=c.model.encoders)
        self.online.to(self.device)
        self.target = copy.deepcopy(self.online).requires_grad_(False)
        self.acting = copy.deepcopy(self.online).to(self.collect_device).requires_grad_(False)
        self._params = list(self.online.parameters())
        self.optimizer = adam(self._params, c.learn.lr, self.device)
        self._td_loss = F.smooth_l1_loss if c.learn.huber else F.mse_loss
        self._rng = numpy_rng(c.seed)
        self._lock = threading.Lock()  # a learn step's weight update vs refresh / eval / state

    @property
    def _model(self) -> torch.nn.Module:
        """DI-engine's name for the trained network, read by its scripts (`policy._model`, e.g.
        for `wandb_online_logger(model=...)`): the online Q network."""
        return self.online

    def _check_model(self, model: torch.nn.Module) -> None:
        """A given network must turn a batch of this policy's observations into [B, n] Q-values."""
        probe = gym.vector.utils.batch_space(self.obs_space, 2).sample()
        try:
            with torch.no_grad():
                q = model(obs_as_tensor(probe, next(model.parameters()).device))
        except (RuntimeError, ValueError, TypeError, KeyError) as err:
            raise ValueError(f"DQNPolicy(model=...): the {type(model).__name__} fails on a batch of "
                             f"observations of {self.obs_space} ({err}); build it from the env's "
                             f"observation space") from err
        if tuple(getattr(q, "shape", ())) != (2, self.n_actions):
            raise ValueError(f"DQNPolicy(model=...): the {type(model).__name__} returns shape "
                             f"{tuple(getattr(q, 'shape', ()))} for 2 observations, expected "
                             f"(2, {self.n_actions}) Q-values for {self.action_space}")

    def _check_cfg(self) -> None:
        learn = self.cfg.learn
        for key in ("lr", "batch_size", "gamma", "nstep", "target_update_freq"):
            if learn[key] is None:
                raise ValueError(f"policy.learn.{key} must be set (it is None).")
        if self.cfg.model.hidden is None:
            raise ValueError("policy.model.hidden must be a tuple of layer sizes (it is None).")
        if learn.tau is not None and not 0.0 < learn.tau <= 1.0:
            raise ValueError(f"policy.learn.tau must be in (0, 1] or None, got {learn.tau}.")
        if learn.target_update_freq < 1:
            raise ValueError("policy.learn.target_update_freq must be >= 1, "
                             f"got {learn.target_update_freq}.")
        if learn.nstep < 1:
            raise ValueError(f"policy.learn.nstep must be >= 1, got {learn.nstep}.")
        if learn.grad_clip is not None and learn.grad_clip <= 0:
            raise ValueError(f"policy.learn.grad_clip must be > 0 or None, got {learn.grad_clip}.")

    # --- collect: epsilon-greedy on the acting copy ---------------------------------------------
    def _forward_collect(self, obs: Any, eps: float = 0.0,
                         action_mask: Any = None) -> Dict[str, np.ndarray]:
        eps = float(eps)  # a PerEnvStep not evaluated by the collector says so here
        obs = obs if isinstance(obs, (np.ndarray, Mapping)) else np.asarray(obs)
        mask = as_mask(action_mask, batch_rows(obs), self.n_actions, "DQN collect")
        if mask is not None:
            return self._masked_collect(obs, eps, mask)
        if eps >= 1.0:  # all random: no need to run the network
            if isinstance(obs, np.ndarray) and obs.shape[1:] != self._obs_shape:
                self._bad_obs(obs)
            action = self._rng.integers(self.n_actions, size=batch_rows(obs))
        else:
            with torch.inference_mode():
                q = self.acting(obs_as_tensor(obs, self.collect_device))
            action = q.cpu().numpy().argmax(axis=1)
            if eps > 0.0:
                # One uniform draw u per row decides both: explore when u < eps, and then u/eps
                # is itself uniform on [0, 1), so it picks the random action (cheaper than a
                # second RNG call on this per-step path).
                u = self._rng.random(action.shape[0])
                random_action = np.minimum((u * (self.n_actions / eps)).astype(np.int64),
                                           self.n_actions - 1)
                action = np.where(u < eps, random_action, action)
        if self.action_offset:
            action = action + self.action_offset
        return {"action": action}

    def _masked_collect(self, obs: Any, eps: float, mask: np.ndarray) -> Dict[str, Any]:
        """ε-greedy over the valid actions: greedy among them, random ones drawn among them."""
        with torch.inference_mode():
            q = self.acting(obs_as_tensor(obs, self.collect_device))
        action = masked_argmax(q.cpu().numpy(), mask)
        if eps > 0.0:
            explore = self._rng.random(action.shape[0]) < eps
            action = np.where(explore, sample_valid(self._rng, mask), action)
        return {"action": action + self.action_offset}

    def _refresh(self) -> None:
        with self._lock:
            hard_update(self.acting, self.online)

    def _bad_obs(self, obs: np.ndarray) -> None:
        raise ObservationShapeError(
            f"DQNPolicy was built for observation space {self.obs_space!r} and expects a batch "
            f"of shape [B, {', '.join(map(str, self._obs_shape))}]; got {obs.shape}.")

    # --- eval: greedy on the online network ------------------------------------------------------
    def _forward_eval(self, obs: Any, action_mask: Any = None) -> Dict[str, np.ndarray]:
        obs = obs if isinstance(obs, (np.ndarray, Mapping)) else np.asarray(obs)
        mask = as_mask(action_mask, batch_rows(obs), self.n_actions, "DQN eval")
        with self._lock, torch.inference_mode():
            q = self.online(obs_as_tensor(obs, self.device))
        return {"action": masked_argmax(q.cpu().numpy(), mask) + self.action_offset}

    # --- learn: one gradient step on a batch -----------------------------------------------------
    def _forward_learn(self, batch: Mapping[str, Any]) -> Dict[str, Any]:
        c = self.cfg.learn
        check_td_batch(batch, "DQN")
        if c.nstep > 1 and "discount" not in batch:
            raise KeyError(f"policy.learn.nstep={c.nstep} but the batch has no 'discount' key; "
                           "feed n-step transitions (rlpipe.data.NStepAccumulator) or set nstep=1.")
        b = to_torch({k: batch[k] for k in _LEARN_KEYS if k in batch}, self.device)
        # A small network's update is dominated by per-op dispatch, so ops that would not change
        # a value are skipped: the cast of int64 actions, the shift of actions starting at 0.
        action = b["action"]
        if action.dtype != torch.int64:
            action = action.long()
        action = action.reshape(-1, 1)
        if self.action_offset:
            action = action - self.action_offset

        td_target = self._td_target(b)

        q_all = self.online(b["obs"])  # Q(obs, ·)
        q = q_all.gather(1, action).squeeze(1)
        weight = b.get("weight")  # prioritised replay: importance-sampling weights
        if weight is None:
            # the loss op's own mean: the same value and gradient as the elementwise loss's
            # mean, without a separate mean op in the forward and backward passes
            loss = self._td_loss(q, td_target)
        else:
            loss = (self._td_loss(q, td_target, reduction="none") * weight.float()).mean()
        extra_loss, extra_stats = self._regulariser(b, q_all, q)
        if extra_loss is not None:
            loss = loss + extra_loss

        grad_norm = grad_step(self.optimizer, loss, self._params, c.grad_clip, norm=True)
        with self._lock:
            self.optimizer.step()
            self.train_iter += 1
            if c.tau is not None:
                soft_update(self.target, self.online, c.tau)
            elif self.train_iter % c.target_update_freq == 0:
                hard_update(self.target, self.online)

        # The statistics from detached q (td_target and grad_norm carry no graph), read back
        # in one stack: one device-to-host copy per update.
        q = q.detach()
        td_abs = (q - td_target).abs()
        values = torch.stack([loss.detach(), q.mean(), td_target.mean(), td_abs.mean(),
                              grad_norm.float()]).tolist()
        names = _STAT_NAMES
        if extra_stats:
            values += torch.stack([v.detach().float() for v in extra_stats.values()]).tolist()
            names += tuple(extra_stats)
        stats: Dict[str, Any] = dict(zip(names, values))
        if weight is not None:
            stats["priority"] = td_abs.cpu().numpy()
        return stats

    def _td_target(self, b: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """y = reward + discount · Q_target(next_obs, a*) for a batch of tensors (no gradient)."""
        with torch.no_grad():
            next_q_target = self.target(b["next_obs"])
            # double-Q: the online net chooses, the target net evaluates
            chooser = self.online(b["next_obs"]) if self.cfg.learn.double_q else next_q_target
            next_mask = b.get("next_action_mask")
            if next_mask is not None:  # choose among the next state's valid actions only
                chooser = chooser.masked_fill(~next_mask.bool(), float("-inf"))
            next_action = chooser.argmax(dim=1, keepdim=True)
            next_value = next_q_target.gather(1, next_action).squeeze(1)
            discount = td_discount(b, self.cfg.learn.gamma)
            return b["reward"].float() + discount * next_value

    def calculate_priority(self, data: Any, update_target_model: bool = False) -> Dict[str, Any]:
        """|TD error| of transitions as they are collected, with the weights this process holds
        (APE-X: collectors give new rows their priority). `data` is `ctx.trajectories` (a list
        of steps, each a dict of [n_envs] arrays) or one batch of rows; `"priority"` is then a
        list with one array per step, or one array. `update_target_model=True` first copies
        the online network into the target (a collector's target network otherwise never
        moves: only the learner trains)."""
        steps = data if isinstance(data, (list, tuple)) else [data]
        if not steps:
            return {"priority": []}
        sizes = [len(step["reward"]) for step in steps]
        keys = [k for k in _LEARN_KEYS if k in steps[0] and k != "weight"]
        batch = {k: _rows([step[k] for step in steps]) for k in keys}
        check_td_batch(batch, "DQN calculate_priority")
        if self.cfg.learn.nstep > 1 and "discount" not in batch:
            raise KeyError(f"DQNPolicy.calculate_priority: policy.learn.nstep="
                           f"{self.cfg.learn.nstep} but the transitions have no 'discount'; run "
                           f"nstep_reward_enhancer(cfg) before priority_calculator")
        with self._lock:
            if update_target_model:
                hard_update(self.target, self.online)
            b = to_torch(batch, self.device)
            td_target = self._td_target(b)
            with torch.no_grad():
                action = b["action"].long().reshape(-1, 1) - self.action_offset
                q = self.online(b["obs"]).gather(1, action).squeeze(1)
        priority = (q - td_target).abs().cpu().numpy()
        if not isinstance(data, (list, tuple)):
            return {"priority": priority}
        return {"priority": np.split(priority, np.cumsum(sizes)[:-1])}

    def _regulariser(self, b: Mapping[str, torch.Tensor], q_all: torch.Tensor,
                     q: torch.Tensor) -> Tuple[Optional[torch.Tensor], Dict[str, torch.Tensor]]:
        """A term added to the TD loss, and its scalar statistics: none for DQN. Offline
        variants override it (CQL: α · (logsumexp_a Q(s, a) − Q(s, a_data))). `b` is the batch
        as tensors, `q_all` Q(obs, ·) of the online net [B, n_actions], `q` Q(obs, action) [B]."""
        return None, {}

    # --- state -----------------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        with self._lock:
            return learner_state(self, _MODULES)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        check_learner_state(self, state, _MODULES)
        with self._lock:
            load_learner_state(self, state, _MODULES)
