"""Small episodes in Minari's layout for the offline tests (T+1 observations, T steps)."""
from __future__ import annotations

from typing import Callable, Dict, List, Optional

import gymnasium as gym
import numpy as np


def play(env_id: str, n_episodes: int, act: Optional[Callable] = None, seed: int = 0,
         env: Optional[gym.Env] = None) -> List[Dict[str, np.ndarray]]:
    """`n_episodes` episodes of `act(obs)` (default: uniform random) as dicts of arrays."""
    env = env or gym.make(env_id)
    env.action_space.seed(seed)
    episodes = []
    for k in range(n_episodes):
        obs, _ = env.reset(seed=seed + k)
        ep: Dict[str, list] = {"observations": [obs], "actions": [], "rewards": [],
                               "terminations": [], "truncations": []}
        done = False
        while not done:
            action = env.action_space.sample() if act is None else act(obs)
            obs, reward, terminated, truncated, _ = env.step(action)
            for key, value in (("observations", obs), ("actions", action), ("rewards", reward),
                               ("terminations", terminated), ("truncations", truncated)):
                ep[key].append(value)
            done = terminated or truncated
        episodes.append({key: _stack(v) for key, v in ep.items()})
    env.close()
    return episodes


def _stack(values: list):
    if isinstance(values[0], dict):
        return {k: _stack([v[k] for v in values]) for k in values[0]}
    return np.asarray(values)


def dict_obs_episodes(n: int, length: int = 6, seed: int = 0) -> List[Dict]:
    """Episodes of a nested Dict observation ({'pos': (2,), 'inner': {'id': int}}); the last
    step terminates."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        done = np.zeros(length, bool)
        done[-1] = True
        out.append({"observations": {"pos": rng.normal(size=(length + 1, 2)).astype(np.float32),
                                     "inner": {"id": rng.integers(0, 5, size=length + 1)}},
                    "actions": rng.integers(0, 3, size=length),
                    "rewards": rng.normal(size=length), "terminations": done,
                    "truncations": np.zeros(length, bool)})
    return out


DICT_SPACE = gym.spaces.Dict({"pos": gym.spaces.Box(-np.inf, np.inf, (2,), np.float32),
                              "inner": gym.spaces.Dict({"id": gym.spaces.Discrete(5)})})
