"""In-memory fakes of the env manager and policy interfaces, for middleware tests."""
from __future__ import annotations

import types

import gymnasium as gym
import numpy as np


class FakeEnvManager:
    """n envs; obs = [env_id, t]; every episode lasts `length` steps and truncates (or
    terminates when `terminate` is set); reward = 1 per step. `crash_at` marks (env, call)
    pairs whose step row is reported as a restart (valid False)."""

    def __init__(self, n_envs=2, length=5, terminate=False, crash_at=()):
        self.n_envs = n_envs
        self.length = length
        self.terminate = terminate
        self.crash_at = set(crash_at)
        self.t = np.zeros(n_envs, dtype=np.int64)
        self.calls = 0
        self.closed = 0
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def _obs(self):
        return np.stack([np.arange(self.n_envs), self.t], axis=1).astype(np.float32)

    def reset(self, seed=None):
        self.t[:] = 0
        return self._obs()

    def step(self, actions):
        assert len(actions) == self.n_envs
        self.calls += 1
        self.t += 1
        ended = self.t >= self.length
        next_obs = self._obs()
        valid = np.ones(self.n_envs, dtype=bool)
        for i in range(self.n_envs):
            if (i, self.calls) in self.crash_at:
                valid[i] = False
                ended[i] = False
                self.t[i] = 0
        episodes = [{"env_id": int(i), "return": float(self.length), "length": self.length}
                    for i in np.flatnonzero(ended)]
        self.t[ended] = 0
        obs = self._obs()
        terminated = ended & self.terminate
        truncated = ended & (not self.terminate)
        return types.SimpleNamespace(obs=obs, next_obs=next_obs,
                                     reward=np.ones(self.n_envs, np.float32),
                                     terminated=terminated, truncated=truncated, valid=valid,
                                     episodes=episodes, infos={})

    def close(self):
        self.closed += 1


class FakeCollectPolicy:
    """Acts 1 everywhere; counts refreshes and records the kwargs it got."""

    def __init__(self):
        self.refreshes = 0
        self.kwargs = []

    def forward(self, obs, **kwargs):
        self.kwargs.append(kwargs)
        return {"action": np.ones(len(obs), dtype=np.int64), "value": obs[:, 1].copy()}

    def refresh(self):
        self.refreshes += 1


class FakeLearnPolicy:
    def __init__(self, loss=0.5):
        self.batches = []
        self.loss = loss

    def forward(self, batch):
        self.batches.append(batch)
        out = {"loss": self.loss, "q_mean": 1.0}
        if "weight" in batch:
            out["priority"] = np.full(len(batch["reward"]), 2.0)
        return out
