"""Soft Actor-Critic (Haarnoja et al. 2018, with the automatic temperature of the 2018 "SAC
algorithms and applications" paper) for continuous Box actions.

Networks:
  actor          — squashed Gaussian π(a|s), a = tanh(u), u ~ N(mean(s), std(s)), trained here;
  acting         — the collector's copy of the actor; refresh() copies actor into it, so acting
                   never reads weights that the learner is writing (async mode);
  critic         — twin Q networks Q1, Q2;
  critic_target  — Polyak average of critic (tau every learn step).
Actors work in [-1, 1]^A; actions are scaled onto the env's Box bounds when acting, and batch
actions are scaled back to [-1, 1] before they reach the critics.

One learn step on a batch (obs, action, reward, next_obs, terminated):
  y = reward + discount · (min_i Q_target_i(next_obs, a') − α log π(a'|next_obs)),  a' ~ π(next_obs)
  discount = batch["discount"] (n-step) or gamma · (1 − terminated)   — truncation bootstraps;
  critic loss  = Σ_i mean (Q_i(obs, action) − y)²;
  actor loss   = mean (α log π(ã|obs) − min_i Q_i(obs, ã)),  ã ~ π(obs) (reparameterised);
  α loss       = −mean log α · (log π(ã|obs) + target_entropy),  target_entropy = −|A| by default.
"""
from __future__ import annotations

import copy
import math
import threading
from typing import Any, Dict, Mapping

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from easydict import EasyDict

from rlpipe.data import to_torch
from rlpipe.models import SquashedGaussianActor, TwinQCritic

from ._common import (adam, check_td_batch, clone_state, grad_step, hard_update,
                      resolve_device, td_discount)
from ._continuous import (CONTINUOUS_HINT, BoxActions, make_generator, polyak,
                          reject_collect_kwargs, set_requires_grad)
from .base import Policy

__all__ = ["SACPolicy"]

_LEARN_KEYS = ("obs", "action", "reward", "next_obs", "terminated", "discount")
_STATE_KEYS = ("actor", "acting", "critic", "critic_target", "log_alpha", "actor_optimizer",
               "critic_optimizer", "alpha_optimizer", "train_iter", "last_actor_stats",
               "collect_rng", "learn_rng")


class SACPolicy(Policy):
    """Soft Actor-Critic for 1-D Box action spaces with finite bounds."""

    pipeline = "off-policy"  # trained by the zoo's off-policy pipeline
    obs_space_types = (gym.spaces.Box,)
    action_space_types = (gym.spaces.Box,)
    space_hint = "SAC needs continuous (Box) actions. " + CONTINUOUS_HINT

    @classmethod
    def default_config(cls) -> EasyDict:
        return EasyDict(
            device="cpu",        # learner device: "cpu", "cuda" or "auto"
            seed=None,           # seeds init and action noise (None: from torch's global RNG)
            model=dict(
                actor_hidden=(256, 256),   # actor MLP layers
                critic_hidden=(256, 256),  # each Q network's MLP layers (input: obs ⊕ action)
                log_std_min=-5.0,          # the actor's log std is squashed into [min, max]
                log_std_max=2.0,           # (the max of that range)
            ),
            learn=dict(
                batch_size=256,      # rows per learn step (read by the learner middleware)
                gamma=0.99,          # discount per env step
                tau=0.005,           # Polyak rate of the target critics, every learn step
                actor_lr=3e-4,       # Adam learning rate of the actor
                critic_lr=3e-4,      # Adam learning rate of the twin critics
                alpha_lr=3e-4,       # Adam learning rate of log α (auto_alpha)
                init_alpha=1.0,      # initial entropy temperature α
                auto_alpha=True,     # tune α so the policy entropy tracks target_entropy
                target_entropy=None,  # None: −(action dimensions)
                actor_update_freq=1,  # update actor and α every N learn steps
                grad_clip=None,      # max global grad norm per network (None: no clipping)
            ),
            collect=dict(
                device="cpu",        # where the acting copy of the actor lives
            ),
        )

    def __init__(self, cfg: Mapping | None, obs_space: gym.Space, action_space: gym.Space) -> None:
        super().__init__(cfg, obs_space, action_space)
        c = self.cfg
        self._check_cfg()
        self.box = BoxActions(action_space, "SACPolicy")
        self.device = resolve_device(c.device)
        self.collect_device = resolve_device(c.collect.device)
        with torch.random.fork_rng(devices=[]):  # seed our init without touching global RNG
            if c.seed is not None:
                torch.manual_seed(c.seed)
            self.actor = SquashedGaussianActor(obs_space, self.box.dim, c.model.actor_hidden,
                                               c.model.log_std_min, c.model.log_std_max)
            self.critic = TwinQCritic(obs_space, self.box.dim, c.model.critic_hidden)
        self.actor.to(self.device)
        self.critic.to(self.device)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.acting = copy.deepcopy(self.actor).to(self.collect_device).requires_grad_(False)
        self.log_alpha = torch.tensor(math.log(c.learn.init_alpha), device=self.device,
                                      requires_grad=True)
        self.target_entropy = (-float(self.box.dim) if c.learn.target_entropy is None
                               else float(c.learn.target_entropy))
        self._actor_params = list(self.actor.parameters())
        self._critic_params = list(self.critic.parameters())
        self._critic_target_params = list(self.critic_target.parameters())
        self.actor_optimizer = adam(self._actor_params, c.learn.actor_lr, self.device)
        self.critic_optimizer = adam(self._critic_params, c.learn.critic_lr, self.device)
        self.alpha_optimizer = adam([self.log_alpha], c.learn.alpha_lr, self.device)
        seed = c.seed
        self._collect_rng = make_generator(self.collect_device, seed)
        self._learn_rng = make_generator(self.device, None if seed is None else seed + 1)
        self._lock = threading.Lock()  # a learn step's weight update vs refresh / eval / state
        self._last_actor_stats = dict(actor_loss=0.0, alpha_loss=0.0, entropy=0.0)

    def _check_cfg(self) -> None:
        learn = self.cfg.learn
        for key in ("batch_size", "gamma", "tau", "actor_lr", "critic_lr", "alpha_lr",
                    "init_alpha", "actor_update_freq"):
            if learn[key] is None:
                raise ValueError(f"policy.learn.{key} must be set (it is None).")
        for key in ("actor_hidden", "critic_hidden"):
            if self.cfg.model[key] is None:
                raise ValueError(f"policy.model.{key} must be a tuple of layer sizes (it is None).")
        if not 0.0 < learn.tau <= 1.0:
            raise ValueError(f"policy.learn.tau must be in (0, 1], got {learn.tau}.")
        if learn.init_alpha <= 0.0:
            raise ValueError(f"policy.learn.init_alpha must be > 0, got {learn.init_alpha}.")
        if learn.actor_update_freq < 1:
            raise ValueError("policy.learn.actor_update_freq must be >= 1, "
                             f"got {learn.actor_update_freq}.")
        if learn.grad_clip is not None and learn.grad_clip <= 0:
            raise ValueError(f"policy.learn.grad_clip must be > 0 or None, got {learn.grad_clip}.")

    @property
    def alpha(self) -> float:
        """The current entropy temperature α."""
        return float(self.log_alpha.detach().exp())

    # --- collect: sample from the acting copy ----------------------------------------------------
    def _forward_collect(self, obs: Any, deterministic: bool = False,
                         **unknown: Any) -> Dict[str, np.ndarray]:
        """`deterministic=True`: tanh(mean) instead of a sample."""
        reject_collect_kwargs("SACPolicy", unknown, "obs and deterministic=False")
        obs_t = torch.as_tensor(np.asarray(obs), device=self.collect_device)
        with torch.inference_mode():
            if deterministic:
                unit = self.acting.deterministic(obs_t)
            else:
                unit = self.acting.sample(obs_t, self._collect_rng)[0]
        return {"action": self.box.to_env(unit.cpu().numpy())}

    def _refresh(self) -> None:
        with self._lock:
            hard_update(self.acting, self.actor)

    # --- eval: the mean action of the learner's actor --------------------------------------------
    def _forward_eval(self, obs: Any) -> Dict[str, np.ndarray]:
        obs_t = torch.as_tensor(np.asarray(obs), device=self.device)
        with self._lock, torch.inference_mode():
            unit = self.actor.deterministic(obs_t)
        return {"action": self.box.to_env(unit.cpu().numpy())}

    # --- learn -----------------------------------------------------------------------------------
    @torch.no_grad()
    def _td_target(self, b: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """y = r + discount · (min_i Q_target_i(s', a') − α log π(a'|s')),  a' ~ π(s')."""
        next_action, next_logp = self.actor.sample(b["next_obs"], self._learn_rng)
        next_q = torch.min(*self.critic_target(b["next_obs"], next_action))
        next_value = next_q - self.log_alpha.exp() * next_logp
        discount = td_discount(b, self.cfg.learn.gamma)
        return b["reward"].float() + discount * next_value

    def _forward_learn(self, batch: Mapping[str, Any]) -> Dict[str, Any]:
        c = self.cfg.learn
        check_td_batch(batch, "SAC")
        b = to_torch({k: batch[k] for k in _LEARN_KEYS if k in batch}, self.device)
        action = self.box.to_unit(b["action"])

        # Critics: regress both Q's on the soft TD target.
        y = self._td_target(b)
        q1, q2 = self.critic(b["obs"], action)
        critic_loss = F.mse_loss(q1, y) + F.mse_loss(q2, y)
        grad_step(self.critic_optimizer, critic_loss, self._critic_params, c.grad_clip)
        with self._lock:
            self.critic_optimizer.step()

        # Actor and temperature, every actor_update_freq learn steps.
        if self.train_iter % c.actor_update_freq == 0:
            new_action, logp = self.actor.sample(b["obs"], self._learn_rng)
            alpha = self.log_alpha.detach().exp()
            set_requires_grad(self._critic_params, False)  # the actor needs dQ/da, not dQ/dweights
            q_new = torch.min(*self.critic(b["obs"], new_action))
            set_requires_grad(self._critic_params, True)
            actor_loss = (alpha * logp - q_new).mean()
            grad_step(self.actor_optimizer, actor_loss, self._actor_params, c.grad_clip)
            stats = dict(actor_loss=actor_loss.detach(), entropy=-logp.detach().mean())
            if c.auto_alpha:
                # α grows while the entropy is below its target and shrinks while above it.
                alpha_loss = -(self.log_alpha * (logp.detach() + self.target_entropy)).mean()
                self.alpha_optimizer.zero_grad(set_to_none=True)
                alpha_loss.backward()
                stats["alpha_loss"] = alpha_loss.detach()
            with self._lock:
                self.actor_optimizer.step()
                if c.auto_alpha:
                    self.alpha_optimizer.step()
            self._last_actor_stats.update({k: float(v) for k, v in stats.items()})

        with self._lock:
            polyak(self._critic_target_params, self._critic_params, c.tau)
            self.train_iter += 1

        values = torch.stack([critic_loss.detach(), q1.detach().mean(), y.mean()]).tolist()
        out: Dict[str, Any] = dict(zip(("critic_loss", "q_mean", "target_mean"), values))
        out.update(self._last_actor_stats, alpha=self.alpha)
        return out

    # --- state -----------------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        with self._lock:
            return {
                "actor": clone_state(self.actor),
                "acting": clone_state(self.acting),
                "critic": clone_state(self.critic),
                "critic_target": clone_state(self.critic_target),
                "log_alpha": self.log_alpha.detach().clone(),
                "actor_optimizer": copy.deepcopy(self.actor_optimizer.state_dict()),
                "critic_optimizer": copy.deepcopy(self.critic_optimizer.state_dict()),
                "alpha_optimizer": copy.deepcopy(self.alpha_optimizer.state_dict()),
                "train_iter": self.train_iter,
                "last_actor_stats": dict(self._last_actor_stats),
                "collect_rng": self._collect_rng.get_state(),
                "learn_rng": self._learn_rng.get_state(),
            }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        missing = set(_STATE_KEYS) - set(state)
        if missing:
            raise KeyError(f"SACPolicy.load_state_dict: the state lacks {sorted(missing)}; "
                           "it must come from SACPolicy.state_dict().")
        with self._lock:
            self.actor.load_state_dict(state["actor"])
            self.acting.load_state_dict(state["acting"])
            self.critic.load_state_dict(state["critic"])
            self.critic_target.load_state_dict(state["critic_target"])
            with torch.no_grad():
                self.log_alpha.copy_(state["log_alpha"])
            self.actor_optimizer.load_state_dict(state["actor_optimizer"])
            self.critic_optimizer.load_state_dict(state["critic_optimizer"])
            self.alpha_optimizer.load_state_dict(state["alpha_optimizer"])
            self.train_iter = int(state["train_iter"])
            self._last_actor_stats = {k: float(v) for k, v in state["last_actor_stats"].items()}
            self._collect_rng.set_state(state["collect_rng"])
            self._learn_rng.set_state(state["learn_rng"])
