"""A policy that acts uniformly at random and learns nothing: a baseline and a test double."""
from __future__ import annotations

from typing import Any, Dict, Mapping

import gymnasium as gym
import numpy as np

from rlpipe.schema import key

from ._common import numpy_rng
from .base import Policy

__all__ = ["RandomPolicy"]


class RandomPolicy(Policy):
    """Samples actions from the action space (any space that gymnasium can batch); its learn
    face only counts calls. Handy for pipeline tests and as a return baseline."""

    @classmethod
    def config_keys(cls) -> Dict[str, Any]:
        return dict(seed=key(None, "seeds the random actions (None: from torch's global RNG)"))

    def __init__(self, cfg: Mapping | None, obs_space: gym.Space, action_space: gym.Space) -> None:
        super().__init__(cfg, obs_space, action_space)
        self._rng = numpy_rng(self.cfg.seed)

    def _sample(self, obs: Any) -> Dict[str, Any]:
        n = len(next(iter(obs.values()))) if isinstance(obs, Mapping) else len(obs)
        if isinstance(self.action_space, gym.spaces.Discrete):
            a = self.action_space.start + self._rng.integers(self.action_space.n, size=n)
        elif isinstance(self.action_space, gym.spaces.Box):
            low = np.where(np.isfinite(self.action_space.low), self.action_space.low, -1.0)
            high = np.where(np.isfinite(self.action_space.high), self.action_space.high, 1.0)
            a = self._rng.uniform(low, high, size=(n, *self.action_space.shape))
            a = a.astype(self.action_space.dtype)
        else:
            batched = gym.vector.utils.batch_space(self.action_space, n)
            batched.seed(int(self._rng.integers(2**31)))
            a = batched.sample()
        return {"action": a}

    def _forward_collect(self, obs: Any, **collect_kwargs: Any) -> Dict[str, Any]:
        return self._sample(obs)

    def _refresh(self) -> None:
        pass

    def _forward_eval(self, obs: Any) -> Dict[str, Any]:
        return self._sample(obs)

    def _forward_learn(self, batch: Mapping[str, Any]) -> Dict[str, Any]:
        self.train_iter += 1
        return {}

    def state_dict(self) -> Dict[str, Any]:
        return {"train_iter": self.train_iter, "rng": self._rng.bit_generator.state}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.train_iter = int(state["train_iter"])
        self._rng.bit_generator.state = state["rng"]
