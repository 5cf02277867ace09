"""A small fake multi-agent env manager that follows rlpipe's multi-agent API (issue 16), and a
collection loop that records steps as the acting path does (keys and shapes [n, A, ...])."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Dict, List, Optional

import gymnasium as gym
import numpy as np


class FakeMultiAgentEnvManager:
    """n_envs copies of a 2-agent game of `episode_len` steps; each agent observes a one-hot of
    the time step (both agents see the same observation). Discrete(3) actions.

    goal "match": each agent gets the team reward payoff[a] when both pick the same a, else 0;
                  once agent 1 is gone, agent 0 gets 1 for action 0.
    goal "own_id": agent i gets 1 for action i (identical observations: only an id tells them
                  apart).
    `death_step`: agent 1 terminates at that step of every episode and is gone after it.
    The global state is the time one-hot and which agents are present (None: `state=False`).
    """

    payoff = np.array([1.0, 0.25, 0.25])

    def __init__(self, n_envs: int = 4, seed: int = 0, episode_len: int = 4,
                 death_step: Optional[int] = None, goal: str = "match", state: bool = True,
                 action_masks: bool = False) -> None:
        self.n_envs, self.episode_len, self.death_step, self.goal = n_envs, episode_len, death_step, goal
        self.agents = ["agent_0", "agent_1"]
        self.n_agents = 2
        self.observation_space = gym.spaces.Box(0.0, 1.0, (episode_len,), np.float32)
        self.action_space = gym.spaces.Discrete(3)
        self.state_space = (gym.spaces.Box(0.0, 1.0, (episode_len + 2,), np.float32)
                            if state else None)
        self._masks = action_masks
        self._rng = np.random.default_rng(seed)
        self._t = np.zeros(n_envs, np.int64)
        self._alive = np.ones((n_envs, 2), bool)
        self._ret = np.zeros((n_envs, 2))

    def _time(self) -> np.ndarray:
        onehot = np.zeros((self.n_envs, self.episode_len), np.float32)
        onehot[np.arange(self.n_envs), np.minimum(self._t, self.episode_len - 1)] = 1.0
        return onehot

    def _obs(self, present: Optional[np.ndarray] = None) -> np.ndarray:
        present = self._alive if present is None else present
        return (self._time()[:, None, :] * present[..., None]).astype(np.float32)

    def _state(self, present: Optional[np.ndarray] = None) -> Optional[np.ndarray]:
        if self.state_space is None:
            return None
        present = self._alive if present is None else present
        return np.concatenate([self._time(), present.astype(np.float32)], 1)

    def _action_mask(self) -> Optional[np.ndarray]:
        if not self._masks:  # action 2 is never allowed; absent agents allow nothing
            return None
        mask = np.ones((self.n_envs, 2, 3), bool)
        mask[..., 2] = False
        return mask & self._alive[..., None]

    def _expose(self) -> None:
        self.agent_mask = self._alive.copy()
        self.global_state = self._state()
        self.action_mask = self._action_mask()

    def reset(self, seed: Optional[int] = None) -> np.ndarray:
        self._t[:] = 0
        self._alive[:] = True
        self._ret[:] = 0.0
        self._expose()
        return self._obs()

    def step(self, actions: np.ndarray) -> SimpleNamespace:
        actions = np.asarray(actions)
        acted = self._alive.copy()
        if self.goal == "match":
            both = acted.all(1)
            team = np.where(actions[:, 0] == actions[:, 1], self.payoff[actions[:, 0]], 0.0)
            alone = (actions[:, 0] == 0).astype(float)
            reward = np.where(both, team, alone)[:, None] * acted
        else:
            reward = (actions == np.arange(2)).astype(float) * acted
        self._t += 1
        term = np.zeros((self.n_envs, 2), bool)
        if self.death_step is not None:
            term[:, 1] = acted[:, 1] & (self._t == self.death_step)
        trunc = acted & ~term & (self._t >= self.episode_len)[:, None]
        self._alive &= ~term
        self._alive &= ~trunc
        next_obs = self._obs(acted)  # the true next (final) obs of every agent that acted
        next_state = self._state(acted & ~term)
        self._ret += reward
        episodes, ended = [], ~self._alive.any(1)
        for e in np.flatnonzero(ended):
            episodes.append({"env_id": int(e), "return": float(self._ret[e].sum()),
                             "length": int(self._t[e]),
                             "agent_returns": dict(zip(self.agents, self._ret[e].tolist()))})
        next_mask = self._action_mask()
        self._t[ended] = 0
        self._alive[ended] = True
        self._ret[ended] = 0.0
        self._expose()
        return SimpleNamespace(
            obs=self._obs(), next_obs=next_obs, reward=reward.astype(np.float32),
            terminated=term, truncated=trunc, agent_mask=acted, next_agent_mask=acted,
            global_state=self.global_state, next_global_state=next_state,
            valid=np.ones(self.n_envs, bool), episodes=episodes,
            action_mask=self.action_mask, next_action_mask=next_mask)


def collect(face: Any, env: FakeMultiAgentEnvManager, n_steps: int,
            obs: Optional[np.ndarray] = None) -> tuple:
    """`n_steps` vector steps of `face` (a collect face) in `env`: (step records, last obs)."""
    obs = env.reset() if obs is None else obs
    steps: List[Dict[str, Any]] = []
    for _ in range(n_steps):
        kwargs: Dict[str, Any] = dict(agent_mask=env.agent_mask, global_state=env.global_state)
        mask = env.action_mask
        if mask is not None:
            kwargs["action_mask"] = mask
        out = face.forward(obs, **kwargs)
        gs, am = env.global_state, env.agent_mask
        r = env.step(out["action"])
        rec = dict(obs=obs, action=out["action"], reward=r.reward, next_obs=r.next_obs,
                   terminated=r.terminated, truncated=r.truncated, agent_mask=am,
                   next_agent_mask=r.next_agent_mask, valid=r.valid)
        if gs is not None:
            rec.update(global_state=gs, next_global_state=r.next_global_state)
        if mask is not None:
            rec.update(action_mask=mask, next_action_mask=r.next_action_mask)
        rec.update({k: v for k, v in out.items() if k != "action"})
        steps.append(rec)
        obs = r.obs
    return steps, obs
