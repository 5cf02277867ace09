"""Small envs with MultiDiscrete and MultiBinary actions, shipped for the action-space tests
(`--env tests.spaces.test_action_spaces_envs:make_bits` etc.), and checks of the envs themselves.

- `BitsEnv`: MultiBinary(4) actions; each step pays the fraction of bits equal to TARGET_BITS.
- `PickEnv`: MultiDiscrete([3, 4], start=[1, 0]) actions; the observation one-hot encodes a cue
  c ∈ {0, 1, 2}; each step pays ½·[a0 = c + 1] + ½·[a1 = (c + 1) mod 4].
Episodes last EPISODE_LEN steps, so the best return is EPISODE_LEN.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import gymnasium as gym
import numpy as np

EPISODE_LEN = 8
TARGET_BITS = np.array([1, 0, 1, 1], dtype=np.int8)


class BitsEnv(gym.Env):
    """Match a fixed bit pattern with MultiBinary actions (reward ∈ [0, 1] per step)."""

    observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.MultiBinary(4)

    def __init__(self) -> None:
        self._t = 0

    def _obs(self) -> np.ndarray:
        return np.array([self._t / EPISODE_LEN], dtype=np.float32)

    def reset(self, *, seed: Optional[int] = None,
              options: Optional[Dict[str, Any]] = None) -> Tuple[np.ndarray, Dict[str, Any]]:
        super().reset(seed=seed)
        self._t = 0
        return self._obs(), {}

    def step(self, action: Any) -> Tuple[np.ndarray, float, bool, bool, Dict[str, Any]]:
        assert self.action_space.contains(np.asarray(action, dtype=np.int8)), action
        reward = float(np.mean(np.asarray(action) == TARGET_BITS))
        self._t += 1
        return self._obs(), reward, False, self._t >= EPISODE_LEN, {}


class PickEnv(gym.Env):
    """Answer a cue with two MultiDiscrete components (reward ∈ {0, ½, 1} per step)."""

    observation_space = gym.spaces.Box(0.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.MultiDiscrete([3, 4], start=[1, 0])

    def __init__(self) -> None:
        self._t, self._cue = 0, 0

    def _obs(self) -> np.ndarray:
        self._cue = int(self.np_random.integers(3))
        return np.eye(3, dtype=np.float32)[self._cue]

    def reset(self, *, seed: Optional[int] = None,
              options: Optional[Dict[str, Any]] = None) -> Tuple[np.ndarray, Dict[str, Any]]:
        super().reset(seed=seed)
        self._t = 0
        return self._obs(), {}

    def step(self, action: Any) -> Tuple[np.ndarray, float, bool, bool, Dict[str, Any]]:
        a = np.asarray(action)
        assert self.action_space.contains(a), action
        reward = 0.5 * (a[0] == self._cue + 1) + 0.5 * (a[1] == (self._cue + 1) % 4)
        self._t += 1
        return self._obs(), float(reward), False, self._t >= EPISODE_LEN, {}


def make_bits() -> gym.Env:
    """A BitsEnv (the `--env MODULE:make_bits` factory)."""
    return BitsEnv()


def make_pick() -> gym.Env:
    """A PickEnv (the `--env MODULE:make_pick` factory)."""
    return PickEnv()


def test_the_envs_pay_the_best_return_for_the_right_actions():
    bits, pick = BitsEnv(), PickEnv()
    bits.reset(seed=0)
    total = sum(bits.step(TARGET_BITS)[1] for _ in range(EPISODE_LEN))
    assert total == EPISODE_LEN
    obs, _ = pick.reset(seed=0)
    total = 0.0
    for _ in range(EPISODE_LEN):
        cue = int(obs.argmax())
        obs, reward, _, truncated, _ = pick.step(np.array([cue + 1, (cue + 1) % 4]))
        total += reward
    assert total == EPISODE_LEN and truncated


class DictActionEnv(BitsEnv):
    """BitsEnv with a Dict action space (which no algorithm takes yet)."""

    action_space = gym.spaces.Dict(bits=gym.spaces.MultiBinary(4), pick=gym.spaces.Discrete(2))


def make_dict_actions() -> gym.Env:
    """A DictActionEnv (the `--env MODULE:make_dict_actions` factory)."""
    return DictActionEnv()
