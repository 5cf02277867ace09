"""`rlpipe dataset collect`: roll a policy (a run's, or uniform random) with optional
epsilon-random or Gaussian action noise through an `EnvManager` into whole episodes.

Episodes are recorded per env with the true terminated/truncated flags and the true final
observation (the manager's `next_obs`); a row the manager marks invalid (its env was restarted
after a crash) drops that env's unfinished episode. Each env contributes a fixed quota of
episodes, so short episodes are not over-represented.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import gymnasium as gym
import numpy as np

Episode = Dict[str, Any]


def _row(batch: Any, i: int) -> Any:
    if isinstance(batch, dict):
        return {k: _row(v, i) for k, v in batch.items()}
    return np.array(batch[i])


def _stack(rows: List[Any]) -> Any:
    if isinstance(rows[0], dict):
        return {k: _stack([r[k] for r in rows]) for k in rows[0]}
    return np.stack(rows)


class Noise:
    """Epsilon-random actions (`eps`, discrete spaces) or Gaussian noise of std `noise` half
    action ranges (Box spaces), clipped to the bounds."""

    def __init__(self, space: gym.Space, eps: float, noise: float, seed: int) -> None:
        discrete = isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete,
                                      gym.spaces.MultiBinary))
        if not 0.0 <= eps <= 1.0:
            raise ValueError(f"--eps must lie in [0, 1], got {eps}")
        if noise < 0:
            raise ValueError(f"--noise must be >= 0 (a std in half action ranges), got {noise}")
        if eps and not discrete:
            raise ValueError(f"--eps takes random actions in discrete action spaces; this env's "
                             f"actions are {space}: use --noise S (Gaussian) instead")
        if noise and not isinstance(space, gym.spaces.Box):
            raise ValueError(f"--noise adds Gaussian noise to Box actions; this env's actions are "
                             f"{space}: use --eps E (epsilon-random) instead")
        self.space, self.eps, self.noise = space, eps, noise
        self.rng = np.random.default_rng(seed)
        space.seed(seed)

    def random(self, n: int, mask: Optional[np.ndarray]) -> np.ndarray:
        """`n` uniform random actions (among the valid ones where `mask` is given)."""
        if mask is not None:
            return np.array([self.rng.choice(np.flatnonzero(m)) for m in mask], dtype=np.int64)
        return np.stack([np.asarray(self.space.sample()) for _ in range(n)])

    def __call__(self, actions: np.ndarray, mask: Optional[np.ndarray]) -> np.ndarray:
        actions = np.array(actions)
        if self.eps:
            pick = self.rng.random(len(actions)) < self.eps
            if pick.any():
                actions[pick] = self.random(len(actions), mask)[pick]
        if self.noise:
            low, high = self.space.low, self.space.high
            actions = actions + self.rng.normal(0.0, 1.0, actions.shape) * self.noise * (high - low) / 2
            actions = np.clip(actions, low, high).astype(self.space.dtype)
        return actions


def policy_actor(face: Any) -> Callable[[Any, Optional[np.ndarray]], np.ndarray]:
    """`act(obs, mask)` of a policy's eval face (as `rlpipe eval` acts)."""
    def act(obs: Any, mask: Optional[np.ndarray]) -> np.ndarray:
        output = face.forward(obs) if mask is None else face.forward(obs, action_mask=mask)
        action = output["action"]
        return action.numpy() if hasattr(action, "numpy") else np.asarray(action)
    return act


def collect(env: Any, act: Optional[Callable], n_episodes: int, noise: Noise,
            progress: bool = True) -> List[Episode]:
    """`n_episodes` whole episodes of `act` (None: uniform random) with `noise`, spread over the
    envs of `env` (an EnvManager), each with T+1 observations."""
    from tqdm import tqdm

    n_envs = env.n_envs
    quota = np.full(n_envs, n_episodes // n_envs)
    quota[: n_episodes % n_envs] += 1
    done = np.zeros(n_envs, int)
    obs = env.reset()
    current = [_new(_row(obs, i)) for i in range(n_envs)]
    finished: List[Episode] = []
    bar = tqdm(total=n_episodes, unit="ep", disable=not progress, desc="collect")
    try:
        while (done < quota).any():
            mask = getattr(env, "action_mask", None)
            actions = noise.random(n_envs, mask) if act is None else noise(act(obs, mask), mask)
            result = env.step(actions)
            for i in range(n_envs):
                if not result.valid[i]:  # the env was restarted: its episode is lost
                    current[i] = _new(_row(result.obs, i))
                    continue
                ep = current[i]
                ep["observations"].append(_row(result.next_obs, i))
                ep["actions"].append(np.array(actions[i]))
                ep["rewards"].append(float(result.reward[i]))
                ep["terminations"].append(bool(result.terminated[i]))
                ep["truncations"].append(bool(result.truncated[i]))
                if result.terminated[i] or result.truncated[i]:
                    if done[i] < quota[i]:
                        finished.append(_close(ep))
                        done[i] += 1
                        bar.update(1)
                        bar.set_postfix(last_return=f"{sum(ep['rewards']):.1f}")
                    current[i] = _new(_row(result.obs, i))
            obs = result.obs
    finally:
        bar.close()
    return finished


def _new(first_obs: Any) -> Dict[str, list]:
    return {"observations": [first_obs], "actions": [], "rewards": [], "terminations": [],
            "truncations": []}


def _close(ep: Dict[str, list]) -> Episode:
    return {"observations": _stack(ep["observations"]), "actions": np.stack(ep["actions"]),
            "rewards": np.asarray(ep["rewards"], np.float64),
            "terminations": np.asarray(ep["terminations"], bool),
            "truncations": np.asarray(ep["truncations"], bool)}
