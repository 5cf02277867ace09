"""TD3+BC (Fujimoto & Gu 2021, "A Minimalist Approach to Offline Reinforcement Learning").

TD3 (td3.py: twin critics, clipped double-Q target, target policy smoothing, delayed actor and
target updates) with two changes, both here:

1. the actor loss gets a behaviour-cloning term, weighted so the Q term has a scale-free size:
       π = argmax E[λ Q1(s, π(s)) − (π(s) − a)²],   λ = α / mean |Q1(s, π(s))|   (λ detached)
   i.e. actor loss = −λ · mean Q1(s, π(s)) + mean (π(s) − a)², with a the data set's action
   (in the actor's [-1, 1] units);
2. states are normalised by the data set's mean and std: `set_obs_normalizer(mean, std)`
   (s − mean) / (std + 1e-3), applied to every observation the policy sees (collect, eval and
   both obs and next_obs of learn batches) and saved in `state_dict()`. Until it is set,
   observations pass unchanged.

The critic update, the targets and the collect face (μ(s) plus Gaussian noise, for online
fine-tuning) are TD3's, unchanged.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Tuple

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F

from rlpipe.schema import extend, key

from ._obs_norm import ObsNormalizer
from .td3 import TD3Policy

__all__ = ["TD3BCPolicy"]


class TD3BCPolicy(TD3Policy):
    """TD3+BC for 1-D Box action spaces with finite bounds; offline first, fine-tunes online."""

    pipeline = "offline"
    space_hint = "TD3+BC needs continuous (Box) actions; for Discrete actions use BC " \
                 "(get_policy('bc'))."
    _ALGO = "TD3+BC"
    _STATE_KEYS = TD3Policy._STATE_KEYS + ("obs_normalizer", "last_bc_stats")
    learn_stats = TD3Policy.learn_stats + ("bc_loss", "q_lambda")

    @classmethod
    def config_keys(cls) -> Dict[str, Any]:
        # The paper's settings (its hyperparameter table, appendix): TD3's own (256-256 MLPs,
        # Adam 3e-4, batch 256, gamma 0.99, tau 0.005, policy noise 0.2 clipped at 0.5, actor
        # every 2 critic steps) plus alpha = 2.5.
        return extend(super().config_keys(), dict(
            learn=dict(
                alpha=key(2.5, "weight of the Q term against BC: λ = alpha / mean|Q|"),
            ),
        ))

    def __init__(self, cfg: Mapping | None, obs_space: gym.Space, action_space: gym.Space) -> None:
        super().__init__(cfg, obs_space, action_space)
        self.obs_normalizer = ObsNormalizer(obs_space, type(self).__name__)
        self._last_bc_stats = dict(bc_loss=0.0, q_lambda=0.0)

    def _check_cfg(self) -> None:
        super()._check_cfg()
        alpha = self.cfg.learn.alpha
        if alpha is None or not alpha >= 0:
            raise ValueError(f"policy.learn.alpha must be >= 0, got {alpha}.")

    def set_obs_normalizer(self, mean: Any, std: Any, eps: float = 1e-3) -> None:
        """Normalise observations as (s − mean) / (std + eps) in every face from now on; call it
        once with the data set's per-dimension mean and std before training."""
        with self._lock:
            self.obs_normalizer.set(mean, std, eps)

    # --- the normaliser in every face --------------------------------------------------------
    def _forward_collect(self, obs: Any, noise_scale: float | None = None,
                         **unknown: Any) -> Dict[str, np.ndarray]:
        return super()._forward_collect(self.obs_normalizer(obs), noise_scale, **unknown)

    def _forward_eval(self, obs: Any) -> Dict[str, np.ndarray]:
        return super()._forward_eval(self.obs_normalizer(obs))

    def _learn_batch(self, batch: Mapping[str, Any]
                     ) -> Tuple[Dict[str, torch.Tensor], torch.Tensor]:
        b, action = super()._learn_batch(batch)
        b["obs"], b["next_obs"] = self.obs_normalizer(b["obs"]), self.obs_normalizer(b["next_obs"])
        return b, action

    # --- the actor loss: −λ Q1(s, π(s)) + (π(s) − a)² -------------------------------------------
    _ACTOR_STATS = TD3Policy._ACTOR_STATS + ("bc_loss", "q_lambda")

    def _actor_loss(self, obs: torch.Tensor,
                    action: torch.Tensor) -> Tuple[torch.Tensor, List[torch.Tensor]]:
        pi = self.actor(obs)
        q = self.critic.q1(obs, pi)
        q_lambda = self.cfg.learn.alpha / q.abs().mean().detach()
        bc_loss = F.mse_loss(pi, action)
        return -q_lambda * q.mean() + bc_loss, [bc_loss.detach(), q_lambda]

    def _record_actor_stats(self, values: List[float]) -> None:
        super()._record_actor_stats(values)
        self._last_bc_stats = dict(zip(("bc_loss", "q_lambda"), values[1:]))

    def _forward_learn(self, batch: Mapping[str, Any]) -> Dict[str, Any]:
        out = super()._forward_learn(batch)
        out.update(self._last_bc_stats)  # from the latest actor update
        return out

    # --- state ---------------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        state = super().state_dict()
        with self._lock:
            state["obs_normalizer"] = self.obs_normalizer.state_dict()
            state["last_bc_stats"] = dict(self._last_bc_stats)
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        super().load_state_dict(state)  # checks every key, ours included
        with self._lock:
            self.obs_normalizer.load_state_dict(state["obs_normalizer"])
            self._last_bc_stats = {k: float(v) for k, v in state["last_bc_stats"].items()}
