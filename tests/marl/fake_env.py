"""A tiny hand-written PettingZoo parallel env for exact checks of the multi-agent path.

Three agents a0, a1, a2 with Discrete(3) actions. The episode lasts `length` steps (then every
agent is truncated); agent a1 terminates after `a1_dies_at` steps and leaves the episode. Agent
k's observation at step t is ``[t, k, noise]`` (noise drawn at reset from the env's seeded
generator), its reward is ``action + 10 * k``. The global state is ``[t, agents left, noise]``.
With `masks` ("obs" or "info") agent k may not take action k. An action for an agent that is
not in the episode raises (PettingZoo envs must never receive one). `crash_file`: the first
step that finds no such file creates it and raises (one crash, across processes).
"""
from __future__ import annotations

import os

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

AGENTS = ("a0", "a1", "a2")


class FakeParallel(ParallelEnv):
    metadata = {"name": "fake_parallel_v0", "is_parallelizable": True}
    render_mode = None

    def __init__(self, length: int = 4, a1_dies_at: int = 2, masks: str | None = None,
                 crash_file: str | None = None, crash_at: int = 1) -> None:
        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []
        self.length, self.a1_dies_at, self.masks = length, a1_dies_at, masks
        self.crash_file, self.crash_at = crash_file, crash_at
        self.state_space = spaces.Box(-np.inf, np.inf, (3,), np.float32)
        obs = spaces.Box(-np.inf, np.inf, (3,), np.float32)
        self._obs_space = (spaces.Dict({"observation": obs, "action_mask": spaces.MultiBinary(3)})
                           if masks == "obs" else obs)
        self.rng = np.random.default_rng()
        self.t, self.noise = 0, 0.0

    def observation_space(self, agent: str) -> spaces.Space:
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Space:
        return spaces.Discrete(3)

    def _obs(self, agent: str):
        k = AGENTS.index(agent)
        o = np.array([self.t, k, self.noise], dtype=np.float32)
        if self.masks == "obs":
            return {"observation": o, "action_mask": self._mask(k)}
        return o

    def _mask(self, k: int) -> np.ndarray:
        mask = np.ones(3, dtype=np.int8)
        mask[k] = 0
        return mask

    def _infos(self, agents):
        if self.masks == "info":
            return {a: {"action_mask": self._mask(AGENTS.index(a))} for a in agents}
        return {a: {} for a in agents}

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t, self.noise = 0, float(self.rng.random())
        self.agents = list(AGENTS)
        return {a: self._obs(a) for a in self.agents}, self._infos(self.agents)

    def state(self) -> np.ndarray:
        return np.array([self.t, len(self.agents), self.noise], dtype=np.float32)

    def _first_to_crash(self) -> bool:
        """Whether this env makes the crash file (atomically: in async mode two workers reach
        the crash step at the same moment, and only one may crash)."""
        try:
            os.close(os.open(self.crash_file, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return False
        return True

    def step(self, actions):
        stray = set(actions) - set(self.agents)
        if stray:
            raise ValueError(f"actions for agents not in the episode: {sorted(stray)}")
        if self.crash_file and self.t == self.crash_at and self._first_to_crash():
            raise RuntimeError("fake env crash")
        self.t += 1
        acting = list(self.agents)
        rewards = {a: float(actions[a]) + 10.0 * AGENTS.index(a) for a in acting}
        term = {a: a == "a1" and self.t >= self.a1_dies_at for a in acting}
        trunc = {a: self.t >= self.length and not term[a] for a in acting}
        obs = {a: self._obs(a) for a in acting}
        self.agents = [a for a in acting if not (term[a] or trunc[a])]
        return obs, rewards, term, trunc, self._infos(acting)


def make(**kwargs) -> FakeParallel:
    return FakeParallel(**kwargs)


def make_aec(**kwargs):
    from pettingzoo.utils.conversions import parallel_to_aec

    return parallel_to_aec(FakeParallel(**kwargs))
