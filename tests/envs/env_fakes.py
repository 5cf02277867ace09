"""Small deterministic envs for the env-manager tests (imported by async workers too)."""

from __future__ import annotations

import os
import time
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class CountingEnv(gym.Env):
    """obs = [t, episode seed draw]; terminates after ``length`` steps; reward 1 per step."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, length: int = 5) -> None:
        self.length = length
        self.observation_space = spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.t = 0
        self.draw = 0.0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.t = 0
        self.draw = float(self.np_random.uniform())
        return self._obs(), {}

    def step(self, action: Any):
        self.t += 1
        return self._obs(), 1.0, self.t >= self.length, False, {}

    def _obs(self) -> np.ndarray:
        return np.array([self.t, self.draw], dtype=np.float32)


class FlakyEnv(CountingEnv):
    """Fails on the ``fail_at``-th step it takes: raises, exits its process (``how="exit"``) or
    hangs (``how="hang"``). With ``only_seed``, only an instance first reset with that seed fails.
    """

    def __init__(
        self, fail_at: int = 7, how: str = "raise", length: int = 50, only_seed: int | None = None
    ) -> None:
        super().__init__(length)
        self.fail_at = fail_at
        self.how = how
        self.only_seed = only_seed
        self.first_seed: int | None = -1
        self.steps_taken = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if self.first_seed == -1:
            self.first_seed = seed
        return super().reset(seed=seed, options=options)

    def step(self, action: Any):
        self.steps_taken += 1
        armed = self.only_seed is None or self.first_seed == self.only_seed
        if self.steps_taken == self.fail_at and armed:
            if self.how == "exit":
                os._exit(3)
            if self.how == "hang":
                time.sleep(60)
            raise RuntimeError(f"boom on step {self.steps_taken}")
        return super().step(action)


class ResetFailsOnceEnv(CountingEnv):
    """Its very first reset raises (class-level flag: only the first instance in a process)."""

    failed = False

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if not ResetFailsOnceEnv.failed:
            ResetFailsOnceEnv.failed = True
            raise ValueError("reset went wrong")
        return super().reset(seed=seed, options=options)


class NestedObsEnv(gym.Env):
    """Dict (or Tuple) observation holding a vector, an image-like array and a discrete value."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, kind: str = "dict", length: int = 4) -> None:
        vec = spaces.Box(-np.inf, np.inf, (3,), np.float32)
        img = spaces.Box(0, 255, (2, 2), np.uint8)
        pos = spaces.Discrete(100)
        inner = spaces.Dict({"img": img, "pos": pos})
        self.kind = kind
        self.length = length
        self.observation_space = (
            spaces.Dict({"vec": vec, "inner": inner})
            if kind == "dict"
            else spaces.Tuple((vec, inner))
        )
        self.action_space = spaces.MultiDiscrete([3, 4])
        self.t = 0
        self.last_action = np.zeros(2, dtype=np.int64)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any):
        assert self.action_space.contains(np.asarray(action)), action
        self.last_action = np.asarray(action)
        self.t += 1
        return self._obs(), float(self.last_action.sum()), False, self.t >= self.length, {}

    def _obs(self) -> Any:
        vec = np.array([self.t, *self.last_action], dtype=np.float32)
        inner = {"img": np.full((2, 2), self.t, dtype=np.uint8), "pos": self.t}
        return {"vec": vec, "inner": inner} if self.kind == "dict" else (vec, inner)


class ActionEchoEnv(gym.Env):
    """Reports the action it received (its type, dtype and value) in ``info["got"]``."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, continuous: bool = False) -> None:
        self.observation_space = spaces.Box(-np.inf, np.inf, (1,), np.float32)
        self.action_space = (
            spaces.Box(-1.0, 1.0, (2,), np.float32) if continuous else spaces.Discrete(3)
        )

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action: Any):
        dtype = getattr(action, "dtype", None)
        got = f"{type(action).__name__}:{dtype}:{np.asarray(action).tolist()}"
        return np.zeros(1, dtype=np.float32), 0.0, False, False, {"got": got}
