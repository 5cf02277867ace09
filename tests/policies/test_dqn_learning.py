"""Learning smoke: DQNPolicy in a plain loop (no rlpipe pipeline) solves most of CartPole."""
import time

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlpipe.policies import DQNPolicy


class _Ring:
    """The smallest uniform replay: preallocated arrays, random rows."""

    def __init__(self, capacity, obs_dim, rng):
        self.obs = np.zeros((capacity, obs_dim), np.float32)
        self.next_obs = np.zeros((capacity, obs_dim), np.float32)
        self.action = np.zeros(capacity, np.int64)
        self.reward = np.zeros(capacity, np.float32)
        self.terminated = np.zeros(capacity, bool)
        self.size, self.pos, self.capacity, self.rng = 0, 0, capacity, rng

    def add(self, obs, action, reward, next_obs, terminated):
        i = self.pos
        self.obs[i], self.action[i], self.reward[i] = obs, action, reward
        self.next_obs[i], self.terminated[i] = next_obs, terminated
        self.pos, self.size = (i + 1) % self.capacity, min(self.size + 1, self.capacity)

    def sample(self, n):
        idx = self.rng.integers(self.size, size=n)
        return {"obs": self.obs[idx], "action": self.action[idx], "reward": self.reward[idx],
                "next_obs": self.next_obs[idx], "terminated": self.terminated[idx],
                "truncated": np.zeros(n, bool)}


def evaluate(policy, env, episodes, seed):
    returns = []
    for k in range(episodes):
        obs, _ = env.reset(seed=seed + k)
        done, total = False, 0.0
        while not done:
            action = int(policy.eval_mode.forward(obs[None])["action"][0])
            obs, reward, terminated, truncated, _ = env.step(action)
            total += reward
            done = terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


def train_cartpole(max_steps=20_000, seed=0, target_return=150.0):
    env, eval_env = gym.make("CartPole-v1"), gym.make("CartPole-v1")
    policy = DQNPolicy({"seed": seed, "model": {"hidden": (128, 128)},
                        "learn": {"lr": 1e-3, "batch_size": 64, "gamma": 0.99,
                                  "target_update_freq": 250, "grad_clip": 10.0}},
                       env.observation_space, env.action_space)
    rng = np.random.default_rng(seed)
    replay = _Ring(max_steps, 4, rng)
    warmup, eps_decay, train_every = 1000, 8000, 2
    obs, _ = env.reset(seed=seed)
    history = []
    for step in range(1, max_steps + 1):
        eps = max(0.05, 1.0 - 0.95 * step / eps_decay)
        if step % 100 == 1:
            policy.collect_mode.refresh()
        action = int(policy.collect_mode.forward(obs[None], eps=eps)["action"][0])
        next_obs, reward, terminated, truncated, _ = env.step(action)
        # the true next obs of the transition; only termination stops the bootstrap
        replay.add(obs, action, reward, next_obs, terminated)
        obs = next_obs
        if terminated or truncated:
            obs, _ = env.reset()
        if step > warmup and step % train_every == 0:
            policy.learn_mode.forward(replay.sample(64))
        if step >= eps_decay and step % 1000 == 0:
            mean_return = evaluate(policy, eval_env, episodes=5, seed=10_000 + step)
            history.append((step, mean_return))
            if mean_return >= target_return:
                break
    return history, policy.learn_mode.train_iter


@pytest.mark.slow
def test_dqn_learns_cartpole_within_20k_steps():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny nets: one thread is faster, and immune to a busy machine
    start = time.perf_counter()
    try:
        history, train_iter = train_cartpole()
    finally:
        torch.set_num_threads(threads)
    elapsed = time.perf_counter() - start
    print(f"\nCartPole DQN: eval history {history}, {train_iter} learn steps, {elapsed:.1f}s")
    assert history and max(r for _, r in history) >= 150.0, history
