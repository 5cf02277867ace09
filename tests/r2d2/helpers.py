"""Hand-made sequence batches and small R2D2 policies for the tests."""
import gymnasium as gym
import numpy as np

from rlpipe.policies import R2D2Policy

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACT = gym.spaces.Discrete(2)


def policy(burn_in=3, seq_len=5, nstep=2, **learn):
    cfg = dict(seed=0, model=dict(hidden=(8,), core_size=6),
               learn=dict(lr=1e-3, batch_size=4, burn_in=burn_in, seq_len=seq_len, stride=seq_len,
                          nstep=nstep, gamma=0.9, grad_clip=None, **learn))
    return R2D2Policy(cfg, OBS, ACT)


def batch(pol, n=4, length=8, valid=None, seed=0, weight=True):
    """`n` sequences of `length` steps; `valid[i]` real steps in row i (padding after)."""
    rng = np.random.default_rng(seed)
    valid = [length] * n if valid is None else valid
    mask = np.arange(length)[None] < np.asarray(valid)[:, None]
    obs = rng.uniform(-1, 1, (n, length, 3)).astype(np.float32)
    next_obs = np.concatenate([obs[:, 1:], rng.uniform(-1, 1, (n, 1, 3))], 1).astype(np.float32)
    terminated = np.zeros((n, length), bool)
    for i, v in enumerate(valid):
        next_obs[i, v - 1] = rng.uniform(-1, 1, 3)  # the episode's true last next obs
        terminated[i, v - 1] = v < length and i % 2 == 0
    out = dict(obs=obs * mask[..., None], next_obs=next_obs * mask[..., None],
               action=rng.integers(0, 2, (n, length)) * mask,
               reward=rng.normal(size=(n, length)).astype(np.float32) * mask,
               terminated=terminated, truncated=np.zeros((n, length), bool),
               first=np.zeros((n, length), bool), mask=mask,
               state={k: rng.normal(size=v.shape).astype(np.float32)
                      for k, v in pol.initial_state(n).items()},
               burn_in=pol.cfg.learn.burn_in, index=np.arange(n))
    if weight:
        out["weight"] = rng.uniform(0.5, 1.0, n).astype(np.float32)
    return out


def grads(pol):
    return {name: None if p.grad is None else p.grad.clone()
            for name, p in pol.online.named_parameters()}
