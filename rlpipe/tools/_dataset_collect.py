"""`rlpipe dataset collect`: roll a policy (a run's, or uniform random) with optional
epsilon-random or Gaussian action noise through an `EnvManager` into whole episodes; the
policy acts, and the envs step, through the acting path (rlpipe.middleware `make_acting`).

Episodes are recorded per env with the true terminated/truncated flags and the true final
observation (the manager's `next_obs`); a row the manager marks invalid (its env was restarted
after a crash) drops that env's unfinished episode. Each env contributes a fixed quota of
episodes, so short episodes are not over-represented.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import gymnasium as gym
import numpy as np

from rlpipe.middleware import EpisodeQuota, make_acting
from rlpipe.random_streams import COLLECT, numpy_rng, stream_seed

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
        # the acting stream of `seed`: env 0 and the manager's action space draw from the
        # seed's own stream
        self.rng = numpy_rng(seed, COLLECT)
        space.seed(stream_seed(seed, COLLECT))

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


class NoisyActor:
    """The face `collect` acts through: `face`'s actions with `noise` added, or, without a
    face, `noise`'s uniform random actions (among the valid ones where the env gives masks).

    `policy` is the policy behind `face`, so the acting path sees what it takes (masks, hidden
    state) and names it in its errors; what the acting path hands in (`action_mask=`, a
    recurrent policy's `state=` and `first=`) is handed on to `face`, and what `face` returns
    beside the action (its next `state`) is returned with the noisy action."""

    def __init__(self, face: Optional[Any], noise: Noise, n_envs: int) -> None:
        self.face, self.noise, self.n_envs = face, noise, n_envs
        if face is None:
            self.supports_action_mask = True
        else:
            self.policy = getattr(face, "policy", face)

    def forward(self, obs: Any, **kwargs: Any) -> Dict[str, Any]:
        mask = kwargs.get("action_mask")
        if self.face is None:
            return {"action": self.noise.random(self.n_envs, mask)}
        output = dict(self.face.forward(obs, **kwargs))
        action = output["action"]
        action = action.numpy() if hasattr(action, "numpy") else np.asarray(action)
        output["action"] = self.noise(action, mask)
        return output


def collect(env: Any, face: Optional[Any], n_episodes: int, noise: Noise,
            progress: bool = True) -> List[Episode]:
    """`n_episodes` whole episodes of a policy's eval `face` (None: uniform random) with
    `noise`, spread over the envs of `env` (an EnvManager, `EpisodeQuota`), each with T+1
    observations. The actor steps the envs through the acting path (`make_acting`)."""
    from tqdm import tqdm

    acting = make_acting(NoisyActor(face, noise, env.n_envs), env)
    n_envs = acting.n_envs
    quota = EpisodeQuota(n_envs, n_episodes)
    obs = acting.cursor.current()
    current = [_new(_row(obs, i)) for i in range(n_envs)]
    finished: List[Episode] = []
    bar = tqdm(total=n_episodes, unit="ep", disable=not progress, desc="collect")
    try:
        while quota.open():
            step, _ = acting.play_step()
            starts = acting.cursor.obs  # where each env acts from next
            for i in range(n_envs):
                if not step["valid"][i]:  # the env was restarted: its episode is lost
                    current[i] = _new(_row(starts, i))
                    continue
                ep = current[i]
                ep["observations"].append(_row(step["next_obs"], i))
                ep["actions"].append(np.array(step["action"][i]))
                ep["rewards"].append(float(step["reward"][i]))
                ep["terminations"].append(bool(step["terminated"][i]))
                ep["truncations"].append(bool(step["truncated"][i]))
                if step["terminated"][i] or step["truncated"][i]:
                    if quota.take(i):
                        finished.append(_close(ep))
                        bar.update(1)
                        bar.set_postfix(last_return=f"{sum(ep['rewards']):.1f}")
                    current[i] = _new(_row(starts, i))
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
