"""Scripted experts and small data sets for offline-RL tests (no training needed to make them).

`cartpole_expert` balances CartPole-v1 (return 500 from most starts); `pendulum_expert` swings
Pendulum-v1 up by energy pumping and holds it with a PD law (returns about -150 to -250).
`rollout_buffer` rolls one of them, with epsilon-random (discrete) or Gaussian (continuous)
noise, into a `ReplayBuffer` in the layout the off-policy learners sample.
"""
from __future__ import annotations

from typing import Callable, Dict, List

import gymnasium as gym
import numpy as np

from rlpipe.data import ReplayBuffer


def cartpole_expert(obs: np.ndarray) -> int:
    """Push towards where the pole is falling (angle plus a share of its angular velocity)."""
    _, x_dot, theta, theta_dot = obs
    return int(theta + 0.5 * theta_dot + 0.01 * x_dot > 0.0)


def pendulum_expert(obs: np.ndarray) -> np.ndarray:
    """Energy pumping far from the top, a PD law near it; torque in [-2, 2]."""
    cos_t, sin_t, theta_dot = obs
    theta = np.arctan2(sin_t, cos_t)
    if cos_t > 0.95:  # near upright: hold it
        torque = -10.0 * theta - 1.5 * theta_dot
    else:  # pump energy towards the upright energy (E = 1 at the top, in units of m g l)
        energy = theta_dot ** 2 / 30.0 + cos_t
        torque = 2.0 * np.sign(theta_dot * (1.0 - energy) + 1e-6)
    return np.array([np.clip(torque, -2.0, 2.0)], dtype=np.float32)


def rollout_buffer(env_id: str, expert: Callable, n_steps: int, *, noise: float = 0.0,
                   seed: int = 0) -> ReplayBuffer:
    """`n_steps` transitions of `expert` (with noise) in one env, true terminated flags and
    final observations, pushed into a ReplayBuffer (obs, action, reward, next_obs, terminated,
    truncated). Discrete: `noise` is the epsilon of uniform random actions; Box: the std of
    Gaussian noise added to the (clipped) action."""
    env = gym.make(env_id)
    rng = np.random.default_rng(seed)
    rows: Dict[str, List] = {k: [] for k in
                             ("obs", "action", "reward", "next_obs", "terminated", "truncated")}
    obs, _ = env.reset(seed=seed)
    discrete = isinstance(env.action_space, gym.spaces.Discrete)
    for _ in range(n_steps):
        action = expert(obs)
        if discrete and rng.random() < noise:
            action = int(rng.integers(env.action_space.n))
        elif not discrete and noise > 0:
            low, high = env.action_space.low, env.action_space.high
            action = np.clip(action + rng.normal(0, noise * (high - low) / 2, action.shape),
                             low, high).astype(np.float32)
        next_obs, reward, terminated, truncated, _ = env.step(action)
        for key, value in (("obs", obs), ("action", action), ("reward", reward),
                           ("next_obs", next_obs), ("terminated", terminated),
                           ("truncated", truncated)):
            rows[key].append(value)
        obs = env.reset()[0] if terminated or truncated else next_obs
    env.close()
    buffer = ReplayBuffer(capacity=n_steps, seed=seed)
    buffer.push({"obs": np.asarray(rows["obs"], np.float32),
                 "action": np.asarray(rows["action"], np.int64 if discrete else np.float32),
                 "reward": np.asarray(rows["reward"], np.float32),
                 "next_obs": np.asarray(rows["next_obs"], np.float32),
                 "terminated": np.asarray(rows["terminated"], bool),
                 "truncated": np.asarray(rows["truncated"], bool)})
    return buffer


def mean_return(env_id: str, act: Callable, episodes: int = 5, seed: int = 100) -> float:
    """Mean undiscounted return of `act(obs)` over `episodes` episodes."""
    env = gym.make(env_id)
    total = 0.0
    for i in range(episodes):
        obs, _ = env.reset(seed=seed + i)
        done = False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            total += float(reward)
            done = terminated or truncated
    env.close()
    return total / episodes
