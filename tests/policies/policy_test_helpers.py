"""Shared builders for the policy tests: tiny linear Q networks with hand-set weights."""
import gymnasium as gym
import numpy as np
import torch

from rlpipe.policies import DQNPolicy

VEC2 = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
VEC4 = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
ACT2 = gym.spaces.Discrete(2)


def linear_dqn(cfg=None, obs_space=VEC2, action_space=ACT2):
    """A DQN whose Q network is one linear layer (hidden=()): Q(s) = W s + b."""
    base = {"seed": 0, "model": {"hidden": ()}}
    for key, value in (cfg or {}).items():
        if isinstance(value, dict):
            base.setdefault(key, {}).update(value)
        else:
            base[key] = value
    return DQNPolicy(base, obs_space, action_space)


@torch.no_grad()
def set_linear(net, weight, bias=None):
    """Set a hidden=() QNetwork's head: weight [n_actions, obs_dim]."""
    w = torch.as_tensor(np.asarray(weight, np.float32))
    net.head.weight.copy_(w)
    net.head.bias.copy_(torch.zeros(w.shape[0]) if bias is None else torch.as_tensor(bias))


def batch(obs, action, reward, next_obs, terminated=None, truncated=None, **extra):
    obs = np.asarray(obs, np.float32)
    n = len(obs)
    out = {
        "obs": obs,
        "action": np.asarray(action, np.int64),
        "reward": np.asarray(reward, np.float32),
        "next_obs": np.asarray(next_obs, np.float32),
        "terminated": np.zeros(n, bool) if terminated is None else np.asarray(terminated, bool),
        "truncated": np.zeros(n, bool) if truncated is None else np.asarray(truncated, bool),
    }
    out.update({k: np.asarray(v) for k, v in extra.items()})
    return out


def random_batch(n=16, obs_dim=4, n_actions=2, seed=0):
    rng = np.random.default_rng(seed)
    return batch(rng.normal(size=(n, obs_dim)), rng.integers(n_actions, size=n),
                 rng.normal(size=n), rng.normal(size=(n, obs_dim)), rng.random(n) < 0.2)
