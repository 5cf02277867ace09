"""TD3: Twin Delayed DDPG (Fujimoto et al. 2018) for continuous Box actions.

Networks:
  actor, actor_target    — deterministic μ(s) in [-1, 1]^A and its Polyak average;
  acting                 — the collector's copy of the actor; refresh() copies actor into it, so
                           acting never reads weights that the learner is writing (async mode);
  critic, critic_target  — twin Q networks Q1, Q2 and their Polyak average.
Actors work in [-1, 1]^A; actions are scaled onto the env's Box bounds when acting, and batch
actions are scaled back to [-1, 1] before they reach the critics. Noise scales are in those
normalised units (0.1 = a tenth of the half-range of each action dimension).

One learn step on a batch (obs, action, reward, next_obs, terminated):
  a' = clip(μ_target(next_obs) + clip(N(0, target_noise), ±target_noise_clip), −1, 1)
                                                               (target policy smoothing)
  y  = reward + discount · min_i Q_target_i(next_obs, a')      (clipped double-Q)
  discount = batch["discount"] (n-step) or gamma · (1 − terminated)   — truncation bootstraps;
  critic loss = Σ_i mean (Q_i(obs, action) − y)²;
  every policy_delay learn steps (delayed policy updates):
    actor loss = −mean Q1(obs, μ(obs)), then Polyak-update actor_target and critic_target.
Collecting adds Gaussian exploration noise N(0, noise_scale) to μ(obs) and clips to the box.
"""
from __future__ import annotations

import copy
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from rlpipe.models import DeterministicActor, obs_as_tensor
from rlpipe.schema import key

from ._common import adam_step, clone_state, compile_learn, grad_step, td_discount
from ._continuous import CONTINUOUS_HINT, polyak, reject_collect_kwargs
from ._twin_critic import TwinCriticPolicy

__all__ = ["TD3Policy"]


class TD3Policy(TwinCriticPolicy):
    """TD3 for 1-D Box action spaces with finite bounds."""

    space_hint = "TD3 needs continuous (Box) actions. " + CONTINUOUS_HINT
    _ALGO = "TD3"
    _STATE_KEYS = ("actor_target", "actor_updates", "last_actor_loss")
    learn_stats = ("critic_loss", "q_mean", "target_mean", "actor_loss")

    @classmethod
    def config_keys(cls) -> Dict[str, Any]:
        return dict(
            device=key("cpu", 'learner device: "cpu", "cuda" or "auto"'),
            seed=key(None, "seeds init and all noise (None: from torch's global RNG)"),
            model=dict(
                actor_hidden=key((256, 256), "actor MLP layers"),
                critic_hidden=key((256, 256), "each Q network's MLP layers (input: obs ⊕ action)"),
                encoders=key({}, 'per Dict key encoder kind, e.g. {"image": "mlp"}'),
            ),
            learn=dict(
                batch_size=key(256, "rows per learn step (read by the learner middleware)"),
                gamma=key(0.99, "discount per env step"),
                tau=key(0.005, "Polyak rate of both targets, at each actor update"),
                actor_lr=key(3e-4, "Adam learning rate of the actor"),
                critic_lr=key(3e-4, "Adam learning rate of the twin critics"),
                policy_delay=key(2, "update actor and targets every N critic updates"),
                target_noise=key(0.2, "std of the target policy smoothing noise (normalised units)"),
                target_noise_clip=key(0.5, "the smoothing noise is clipped to ± this"),
                grad_clip=key(None, "max global grad norm per network (None: no clipping)"),
                compile=key(False, "run the losses and their backward through torch.compile "
                                   "(compiled at the first learn step)"),
            ),
            collect=dict(
                device=key("cpu", "where the acting copy of the actor lives"),
                noise_scale=key(0.1, "std of the Gaussian exploration noise (normalised units)"),
            ),
        )

    actor_class = DeterministicActor

    def __init__(self, cfg: Mapping | None, obs_space: Optional[gym.Space] = None,
                 action_space: Optional[gym.Space] = None, *,
                 model: Optional[nn.Module] = None,
                 enable_field: Optional[Sequence[str] | str] = None) -> None:
        # actor, twin critics, target, acting copy
        super().__init__(cfg, obs_space, action_space, model=model, enable_field=enable_field)
        self.actor_target = copy.deepcopy(self.actor).requires_grad_(False)
        # parameter lists, fixed: targets move as one Polyak step over online + target lists
        self._online_params = self._actor_params + self._critic_params
        self._target_params = (list(self.actor_target.parameters())
                               + list(self.critic_target.parameters()))
        self.actor_updates = 0
        self._last_actor_loss = 0.0
        who, compile_ = type(self).__name__, self.cfg.learn.compile
        self._critic_step = compile_learn(self._critic_losses, compile_, who)
        self._actor_step = compile_learn(self._actor_losses, compile_, who)

    def _make_actor(self, obs_space: gym.Space) -> nn.Module:
        return DeterministicActor(obs_space, self.box.dim, self.cfg.model.actor_hidden,
                                  encoders=self.cfg.model.encoders)

    def _check_cfg(self) -> None:
        super()._check_cfg(("policy_delay", "target_noise", "target_noise_clip"))
        learn = self.cfg.learn
        if learn.policy_delay < 1:
            raise ValueError(f"policy.learn.policy_delay must be >= 1, got {learn.policy_delay}.")
        if learn.target_noise < 0 or learn.target_noise_clip < 0:
            raise ValueError("policy.learn.target_noise and target_noise_clip must be >= 0, got "
                             f"{learn.target_noise} and {learn.target_noise_clip}.")
        noise = self.cfg.collect.noise_scale
        if noise is None or noise < 0:
            raise ValueError(f"policy.collect.noise_scale must be >= 0, got {noise}.")

    # --- collect: μ(obs) + Gaussian noise on the acting copy; eval: μ(obs), no noise ------------
    def _forward_collect(self, obs: Any, noise_scale: float | None = None,
                         **unknown: Any) -> Dict[str, np.ndarray]:
        """`noise_scale` overrides `policy.collect.noise_scale` for this call (0: no noise)."""
        reject_collect_kwargs("TD3Policy", unknown, "obs and noise_scale=None")
        scale = self.cfg.collect.noise_scale if noise_scale is None else float(noise_scale)
        obs_t = obs_as_tensor(obs, self.collect_device)
        with torch.inference_mode():
            unit = self.acting(obs_t)
            if scale > 0.0:
                noise = torch.randn(unit.shape, generator=self._collect_rng,
                                    device=unit.device, dtype=unit.dtype)
                unit = (unit + scale * noise).clamp(-1.0, 1.0)
        return {"action": self.box.to_env(unit.cpu().numpy())}

    # --- learn -----------------------------------------------------------------------------------
    _ACTOR_STATS: Tuple[str, ...] = ("actor_loss",)  # what `_actor_loss` reports, in order

    def _smoothing_noise(self, rows: int) -> torch.Tensor:
        """N(0, 1) draws for the target policy smoothing of `rows` next states, made outside
        the loss computation, so that it stays free of RNG state (and compilable)."""
        return torch.randn((rows, self.box.dim), generator=self._learn_rng, device=self.device)

    def _target_action(self, next_obs: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """Target policy smoothing: μ_target(s') plus clipped Gaussian noise, kept in the box."""
        c = self.cfg.learn
        action = self.actor_target(next_obs)
        noise = (noise * c.target_noise).clamp(-c.target_noise_clip, c.target_noise_clip)
        return (action + noise).clamp(-1.0, 1.0)

    @torch.no_grad()
    def _td_target(self, b: Mapping[str, torch.Tensor], noise: torch.Tensor) -> torch.Tensor:
        """y = r + discount · min_i Q_target_i(s', a'),  a' smoothed target action."""
        next_q = torch.min(*self.critic_target(b["next_obs"],
                                               self._target_action(b["next_obs"], noise)))
        discount = td_discount(b, self.cfg.learn.gamma)
        return b["reward"].float() + discount * next_q

    def _critic_losses(self, b: Mapping[str, torch.Tensor], action: torch.Tensor,
                       noise: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """The critics' loss on the clipped double-Q target, and [critic_loss, q_mean,
        target_mean]."""
        y = self._td_target(b, noise)
        critic_loss, q1 = self._critic_loss(b["obs"], action, y)
        return critic_loss, torch.stack([critic_loss.detach(), q1.detach().mean(), y.mean()])

    def _actor_loss(self, obs: torch.Tensor,
                    action: torch.Tensor) -> Tuple[torch.Tensor, List[torch.Tensor]]:
        """−mean Q1(obs, μ(obs)), and the scalars `_ACTOR_STATS` names after actor_loss (none
        here; `action`, the batch's, is unused here; TD3+BC's loss reads it)."""
        return -self.critic.q1(obs, self.actor(obs)).mean(), []

    def _actor_losses(self, obs: torch.Tensor,
                      action: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """The actor's loss, and its statistics in the order of `_ACTOR_STATS`."""
        actor_loss, extra = self._actor_loss(obs, action)
        return actor_loss, torch.stack([actor_loss.detach(), *extra])

    def _forward_learn(self, batch: Mapping[str, Any]) -> Dict[str, Any]:
        c = self.cfg.learn
        b, action = self._learn_batch(batch)

        # Critics: regress both Q's on the clipped double-Q target.
        noise = self._smoothing_noise(action.shape[0])
        critic_loss, stats = self._critic_step(b, action, noise)
        grad_step(self.critic_optimizer, critic_loss, self._critic_params, c.grad_clip)
        with self._lock:
            adam_step(self.critic_optimizer)
            self.train_iter += 1

        # Delayed policy update: the actor and both targets move every policy_delay steps.
        if self.train_iter % c.policy_delay == 0:
            with self._critics_frozen():
                actor_loss, actor_stats = self._actor_step(b["obs"], action)
            grad_step(self.actor_optimizer, actor_loss, self._actor_params, c.grad_clip)
            with self._lock:
                adam_step(self.actor_optimizer)
                polyak(self._target_params, self._online_params, c.tau)
                self.actor_updates += 1
            stats = torch.cat([stats, actor_stats])

        values = stats.tolist()  # one read of the device for every statistic of the step
        if len(values) > 3:
            self._record_actor_stats(values[3:])
        out = dict(zip(("critic_loss", "q_mean", "target_mean"), values))
        out["actor_loss"] = self._last_actor_loss  # from the latest actor update
        return out

    def _record_actor_stats(self, values: List[float]) -> None:
        """Keep the statistics of this step's actor update (in the order of `_ACTOR_STATS`)."""
        self._last_actor_loss = values[0]

    # --- state -----------------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        with self._lock:
            return {
                **self._twin_state(),
                "actor_target": clone_state(self.actor_target),
                "actor_updates": self.actor_updates,
                "last_actor_loss": self._last_actor_loss,
            }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        with self._lock:
            self._load_twin_state(state)
            self.actor_target.load_state_dict(state["actor_target"])
            self.actor_updates = int(state["actor_updates"])
            self._last_actor_loss = float(state["last_actor_loss"])
