"""`TwinCriticPolicy`: the machinery that SAC and TD3 share, so that each of their files holds
only its paper's update.

Both learn an actor in [-1, 1]^A (scaled onto the env's Box bounds by `BoxActions`) against twin
Q networks Q1, Q2 with a Polyak-averaged target copy, and act through a copy of the actor that
`refresh()` updates (so the collector never reads weights the learner is writing). Shared here:
building the networks, optimisers and seeded RNGs; the config checks common to both; the
critic regression on a target y; freezing the critics while the actor follows dQ/da; the greedy
eval face; and the state snapshot. A subclass sets `_ALGO`, `_STATE_KEYS` (its extra state) and
builds its actor in `_make_actor`; it writes `_forward_collect`, `_td_target` and
`_forward_learn`, and adds its own state to `_twin_state()` / `_load_twin_state()`.
"""
from __future__ import annotations

import copy
import threading
from contextlib import contextmanager
from typing import Any, Dict, Iterator, Mapping, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from rlpipe.data import to_torch
from rlpipe.models import TwinQCritic, obs_as_tensor
from rlpipe.random_streams import COLLECT, LEARN, seed_or_draw, torch_rng

from ._common import (adam, check_td_batch, clone_state, hard_update, model_spaces,
                      resolve_device)
from ._continuous import BoxActions, set_requires_grad
from .base import Policy

_LEARN_KEYS = ("obs", "action", "reward", "next_obs", "terminated", "discount")
_TWIN_STATE_KEYS = ("actor", "acting", "critic", "critic_target", "actor_optimizer",
                    "critic_optimizer", "train_iter", "collect_rng", "learn_rng")


class TwinCriticPolicy(Policy):
    """Base of the actor + twin-critic policies (SAC, TD3) for 1-D Box actions with finite
    bounds. Attributes: `actor`, `acting`, `critic`, `critic_target`, `actor_optimizer`,
    `critic_optimizer`, `box`, `device`, `collect_device`."""

    pipeline = "off-policy"  # trained by the zoo's off-policy pipeline
    obs_space_types = (gym.spaces.Box, gym.spaces.Dict, gym.spaces.Tuple, gym.spaces.Discrete,
                       gym.spaces.MultiDiscrete)
    action_space_types = (gym.spaces.Box,)
    _ALGO = "TwinCritic"           # short name in messages: "SAC", "TD3"
    _STATE_KEYS: Tuple[str, ...] = ()  # the subclass's state beyond _TWIN_STATE_KEYS
    _REQUIRED_LEARN = ("batch_size", "gamma", "tau", "actor_lr", "critic_lr")

    actor_class: type = nn.Module
    """The class of the actor `_make_actor` builds (a given model's actor must be one)."""

    def __init__(self, cfg: Mapping | None, obs_space: Optional[gym.Space] = None,
                 action_space: Optional[gym.Space] = None, *,
                 model: Optional[nn.Module] = None,
                 enable_field: Optional[Sequence[str] | str] = None) -> None:
        """`model` (DI-engine's `Policy(cfg, model=...)`): a module whose `actor` (the class
        `_make_actor` builds) and `critic` (a `TwinQCritic`) the policy trains instead of
        building its own, e.g. `rlpipe.models.ContinuousQAC` or `nn.ModuleDict(dict(actor=...,
        critic=...))`; both are checked against the spaces, which may be left out when the
        model records them (`obs_space`, `action_space`, as ContinuousQAC does)."""
        who = type(self).__name__
        if model is not None:
            obs_space, action_space = model_spaces(model, obs_space, action_space, who)
            if action_space is None:
                raise TypeError(f"{who}(cfg, model=...): the {type(model).__name__} records no "
                                f"action_space; pass {who}(cfg, obs_space, action_space, model=model)")
        elif obs_space is None or action_space is None:
            raise TypeError(f"{who} needs (cfg, obs_space, action_space) or (cfg, model=...) with "
                            f"a model built for the env's spaces, e.g. rlpipe.models.ContinuousQAC")
        super().__init__(cfg, obs_space, action_space, enable_field=enable_field)
        c = self.cfg
        self._check_cfg()
        self.box = BoxActions(action_space, type(self).__name__)
        self.device = resolve_device(c.device)
        self.collect_device = resolve_device(c.collect.device)
        if model is not None:
            self.actor, self.critic = self._given_networks(model)
        else:
            with torch.random.fork_rng(devices=[]):  # seed our init without touching global RNG
                if c.seed is not None:
                    torch.manual_seed(c.seed)
                self.actor = self._make_actor(obs_space)
                self.critic = TwinQCritic(obs_space, self.box.dim, c.model.critic_hidden,
                                          encoders=c.model.encoders)
        self.actor.to(self.device)
        self.critic.to(self.device)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.acting = copy.deepcopy(self.actor).to(self.collect_device).requires_grad_(False)
        self._actor_params = list(self.actor.parameters())
        self._critic_params = list(self.critic.parameters())
        self.actor_optimizer = adam(self._actor_params, c.learn.actor_lr, self.device)
        self.critic_optimizer = adam(self._critic_params, c.learn.critic_lr, self.device)
        seed = seed_or_draw(c.seed)  # exploration and learning noise: streams apart from the init
        self._collect_rng = torch_rng(self.collect_device, seed, COLLECT)
        self._learn_rng = torch_rng(self.device, seed, LEARN)
        self._lock = threading.Lock()  # a learn step's weight update vs refresh / eval / state

    def _given_networks(self, model: nn.Module) -> Tuple[nn.Module, nn.Module]:
        """`model.actor` and `model.critic`, checked: the actor's class, the action size of both,
        and that both run on a batch of this policy's observations."""
        who = f"{type(self).__name__}(cfg, obs_space, action_space, model=...)"
        actor, critic = getattr(model, "actor", None), getattr(model, "critic", None)
        expected = self.actor_class
        if not isinstance(actor, expected) or not isinstance(critic, TwinQCritic):
            raise TypeError(f"{who}: the model needs .actor, a {expected.__name__}, and .critic, "
                            f"a TwinQCritic (rlpipe.models); got {type(actor).__name__} and "
                            f"{type(critic).__name__}")
        for name, net in (("actor", actor), ("critic", critic)):
            if net.action_dim != self.box.dim:
                raise ValueError(f"{who}: the {name} was built for {net.action_dim} action "
                                 f"dimensions, the action space has {self.box.dim}")
        device = next(critic.parameters()).device
        probe = obs_as_tensor(gym.vector.utils.batch_space(self.obs_space, 2).sample(), device)
        try:
            with torch.no_grad():
                actor(probe)
                critic(probe, torch.zeros(2, self.box.dim, device=device))
        except (RuntimeError, ValueError, TypeError, KeyError) as err:
            raise ValueError(f"{who}: the model fails on a batch of observations of "
                             f"{self.obs_space} ({err}); build it from the env's observation "
                             f"space") from err
        return actor, critic

    def _make_actor(self, obs_space: gym.Space) -> nn.Module:
        """The subclass's actor network (built under the policy's seed)."""
        raise NotImplementedError(f"{type(self).__name__} must define _make_actor(obs_space)")

    def _check_cfg(self, required: Tuple[str, ...] = ()) -> None:
        """Checks common to SAC and TD3 (plus `required` learn keys that must not be None);
        a subclass extends it with its own."""
        learn = self.cfg.learn
        for key in self._REQUIRED_LEARN + tuple(required):
            if learn[key] is None:
                raise ValueError(f"policy.learn.{key} must be set (it is None).")
        for key in ("actor_hidden", "critic_hidden"):
            if self.cfg.model[key] is None:
                raise ValueError(f"policy.model.{key} must be a tuple of layer sizes (it is None).")
        if not 0.0 < learn.tau <= 1.0:
            raise ValueError(f"policy.learn.tau must be in (0, 1], got {learn.tau}.")
        if learn.grad_clip is not None and learn.grad_clip <= 0:
            raise ValueError(f"policy.learn.grad_clip must be > 0 or None, got {learn.grad_clip}.")

    # --- acting copy and eval --------------------------------------------------------------------
    def _refresh(self) -> None:
        with self._lock:
            hard_update(self.acting, self.actor)

    def _greedy(self, actor: nn.Module, obs: torch.Tensor) -> torch.Tensor:
        """The actor's action without exploration, in [-1, 1]^A (TD3: μ(s))."""
        return actor(obs)

    def _forward_eval(self, obs: Any) -> Dict[str, np.ndarray]:
        obs_t = obs_as_tensor(obs, self.device)
        with self._lock, torch.inference_mode():
            unit = self._greedy(self.actor, obs_t)
        return {"action": self.box.to_env(unit.cpu().numpy())}

    # --- learn helpers ---------------------------------------------------------------------------
    def _learn_batch(self, batch: Mapping[str, Any]) -> Tuple[Dict[str, torch.Tensor], torch.Tensor]:
        """The batch as tensors on the learner device, and its actions mapped to [-1, 1]^A."""
        check_td_batch(batch, self._ALGO)
        b = to_torch({k: batch[k] for k in _LEARN_KEYS if k in batch}, self.device)
        return b, self.box.to_unit(b["action"])

    def _critic_loss(self, obs: torch.Tensor, action: torch.Tensor,
                     y: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """Σ_i mean (Q_i(obs, action) − y)² and Q1(obs, action) (for the q_mean statistic)."""
        q1, q2 = self.critic(obs, action)
        return F.mse_loss(q1, y) + F.mse_loss(q2, y), q1

    @contextmanager
    def _critics_frozen(self) -> Iterator[None]:
        """Inside, the critics' weights take no gradient: the actor's loss needs dQ/da only."""
        set_requires_grad(self._critic_params, False)
        try:
            yield
        finally:
            set_requires_grad(self._critic_params, True)

    # --- state -----------------------------------------------------------------------------------
    def _twin_state(self) -> Dict[str, Any]:
        """The shared part of `state_dict()` (the caller holds the lock)."""
        return {
            "actor": clone_state(self.actor),
            "acting": clone_state(self.acting),
            "critic": clone_state(self.critic),
            "critic_target": clone_state(self.critic_target),
            "actor_optimizer": copy.deepcopy(self.actor_optimizer.state_dict()),
            "critic_optimizer": copy.deepcopy(self.critic_optimizer.state_dict()),
            "train_iter": self.train_iter,
            "collect_rng": self._collect_rng.get_state(),
            "learn_rng": self._learn_rng.get_state(),
        }

    def _load_twin_state(self, state: Mapping[str, Any]) -> None:
        """Check that `state` has every key, then load the shared part (caller holds the lock)."""
        missing = (set(_TWIN_STATE_KEYS) | set(self._STATE_KEYS)) - set(state)
        if missing:
            name = type(self).__name__
            raise KeyError(f"{name}.load_state_dict: the state lacks {sorted(missing)}; "
                           f"it must come from {name}.state_dict().")
        self.actor.load_state_dict(state["actor"])
        self.acting.load_state_dict(state["acting"])
        self.critic.load_state_dict(state["critic"])
        self.critic_target.load_state_dict(state["critic_target"])
        self.actor_optimizer.load_state_dict(state["actor_optimizer"])
        self.critic_optimizer.load_state_dict(state["critic_optimizer"])
        self.train_iter = int(state["train_iter"])
        self._collect_rng.set_state(state["collect_rng"])
        self._learn_rng.set_state(state["learn_rng"])
