"""Pack episodes (Minari's layout: T+1 observations, T actions/rewards/flags) into flat arrays,
once, checking each episode on the way: lengths, keys, finite rewards and observations.

Observations are stored once per episode (T+1 rows); transition i reads its observation at
`obs_row[i]` and its next observation at `obs_row[i] + 1`, so next_obs is never a copy.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

import gymnasium as gym
import numpy as np

from ._tree import Path, flatten, path_name

EPISODE_KEYS = ("observations", "actions", "rewards", "terminations", "truncations")
ACTION_SPACES = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete,
                 gym.spaces.MultiBinary)


class OfflineDataError(ValueError):
    """A data set that cannot be used: missing, empty, malformed, non-finite, or made for
    other spaces than the env's. The message is one line naming the data set and the fix."""


@dataclasses.dataclass
class Packed:
    """Flat arrays of a data set: `obs` ({path: [rows, ...]}, T+1 rows per episode), `action`,
    `reward` (float32), `terminated`, `truncated` (bool), `obs_row` (int64, per transition),
    `starts` (int64 [E+1], the first transition of each episode, then the total)."""

    obs: Dict[Path, np.ndarray]
    action: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    obs_row: np.ndarray
    starts: np.ndarray

    @property
    def episode_returns(self) -> np.ndarray:
        return np.add.reduceat(self.reward, self.starts[:-1]).astype(np.float64) \
            if len(self.reward) else np.zeros(0)

    @property
    def nbytes(self) -> int:
        arrays = list(self.obs.values()) + [self.action, self.reward, self.terminated,
                                            self.truncated, self.obs_row, self.starts]
        return int(sum(a.nbytes for a in arrays))


def as_obs_tree(obs: Any) -> Any:
    """An observation batch as rlpipe holds it: a Tuple's tuple becomes a dict keyed '0', '1', ..."""
    if isinstance(obs, Mapping):
        return {str(k): as_obs_tree(v) for k, v in obs.items()}
    if isinstance(obs, tuple):  # Minari's batch of a Tuple space: one batch per part
        return {str(i): as_obs_tree(v) for i, v in enumerate(obs)}
    return obs


def leaf_spaces(space: gym.Space, prefix: Path = ()) -> Dict[Path, gym.Space]:
    """{path: space} of the leaves of a (nested Dict / Tuple) observation space."""
    if isinstance(space, gym.spaces.Dict):
        out: Dict[Path, gym.Space] = {}
        for key, sub in space.spaces.items():
            out.update(leaf_spaces(sub, prefix + (str(key),)))
        return out
    if isinstance(space, gym.spaces.Tuple):
        out = {}
        for i, sub in enumerate(space.spaces):
            out.update(leaf_spaces(sub, prefix + (str(i),)))
        return out
    return {prefix: space}


def _obs_leaves(obs: Any) -> Dict[Path, np.ndarray]:
    tree = as_obs_tree(obs)
    if isinstance(tree, Mapping):
        return {p: np.asarray(v) for p, v in flatten(tree).items()}
    return {(): np.asarray(tree)}


def _first_bad(values: np.ndarray) -> Optional[int]:
    """The first row (step) of `values` holding a NaN or infinity, None when all are finite."""
    if not np.issubdtype(values.dtype, np.floating):
        return None
    finite = np.isfinite(values.reshape(len(values), -1)).all(axis=1)
    return None if finite.all() else int(np.argmin(finite))


def check_episode(k: int, episode: Mapping[str, Any], where: str) -> Tuple[int, Dict[Path, np.ndarray]]:
    """(T, observation leaves) of episode `k`, after checking its keys, lengths and values."""
    if not isinstance(episode, Mapping):
        raise OfflineDataError(f"{where}: episode {k} is a {type(episode).__name__}; each episode "
                               f"is a dict with keys {', '.join(EPISODE_KEYS)}")
    missing = [key for key in EPISODE_KEYS if key not in episode]
    if missing:
        raise OfflineDataError(f"{where}: episode {k} has no {missing[0]!r}; each episode needs "
                               f"{', '.join(EPISODE_KEYS)}")
    rewards = np.asarray(episode["rewards"])
    steps = len(rewards) if rewards.ndim else 0
    if steps == 0:
        raise OfflineDataError(f"{where}: episode {k} has no steps (0 rewards); drop it")
    for key in ("actions", "terminations", "truncations"):
        n = len(np.asarray(episode[key]))
        if n != steps:
            raise OfflineDataError(f"{where}: episode {k} has {n} {key} but {steps} rewards; "
                                   f"every per-step array needs one row per step")
    leaves = _obs_leaves(episode["observations"])
    for path, arr in leaves.items():
        name = f"observations/{path_name(path)}" if path else "observations"
        if arr.ndim == 0 or len(arr) != steps + 1:
            raise OfflineDataError(
                f"{where}: episode {k} has {len(arr) if arr.ndim else 0} {name} but {steps} "
                f"steps; an episode holds T+1 observations (the first, then one after each step)")
        bad = _first_bad(arr)
        if bad is not None:
            raise OfflineDataError(f"{where}: episode {k} has a non-finite observation ({name}) at "
                                   f"step {bad}; clean or drop that episode")
    bad = _first_bad(rewards.astype(np.float64, copy=False))
    if bad is not None:
        raise OfflineDataError(f"{where}: episode {k} has reward {rewards[bad]} at step {bad}; "
                               f"rewards must be finite: clean or drop that episode")
    return steps, leaves


def _layout(leaves: Mapping[Path, np.ndarray], obs_space: gym.Space, where: str) -> Dict[Path, np.dtype]:
    """The dtype of each observation leaf: the space's where it gives one, else the data's."""
    spaces = leaf_spaces(obs_space)
    if set(spaces) != set(leaves):
        have = ", ".join(path_name(p) or "(array)" for p in leaves)
        want = ", ".join(path_name(p) or "(array)" for p in spaces)
        raise OfflineDataError(f"{where}: the observations hold keys [{have}] but the observation "
                               f"space {obs_space} has [{want}]; the data and its spaces disagree")
    return {p: np.dtype(getattr(spaces[p], "dtype", None) or leaves[p].dtype) for p in leaves}


def pack(episodes: Iterable[Mapping[str, Any]], n_episodes: int, n_steps: int,
         observation_space: gym.Space, action_space: gym.Space, where: str) -> Packed:
    """Pack `n_episodes` episodes of `n_steps` transitions in all into preallocated arrays (the
    peak memory is the arrays plus one episode)."""
    if not isinstance(action_space, ACTION_SPACES):
        raise OfflineDataError(f"{where}: action space {action_space} is not supported; offline "
                               f"data sets take Box, Discrete, MultiDiscrete or MultiBinary actions")
    if n_episodes <= 0 or n_steps <= 0:
        raise OfflineDataError(f"{where}: the data set is empty ({n_episodes} episodes, {n_steps} "
                               f"transitions); collect some with `rlpipe dataset collect`")
    act_shape, act_dtype = tuple(action_space.shape or ()), np.dtype(action_space.dtype)
    action = np.empty((n_steps,) + act_shape, act_dtype)
    reward = np.empty(n_steps, np.float32)
    terminated = np.empty(n_steps, bool)
    truncated = np.empty(n_steps, bool)
    obs_row = np.empty(n_steps, np.int64)
    starts = np.empty(n_episodes + 1, np.int64)
    obs: Dict[Path, np.ndarray] = {}
    t = k = 0
    for episode in episodes:
        steps, leaves = check_episode(k, episode, where)
        if k >= n_episodes or t + steps > n_steps:
            raise OfflineDataError(f"{where}: more data than announced ({n_episodes} episodes, "
                                   f"{n_steps} transitions); its metadata is stale")
        if not obs:
            dtypes = _layout(leaves, observation_space, where)
            obs = {p: np.empty((n_steps + n_episodes,) + a.shape[1:], dtypes[p])
                   for p, a in leaves.items()}
        for p, arr in leaves.items():
            if p not in obs or arr.shape[1:] != obs[p].shape[1:]:
                raise OfflineDataError(f"{where}: episode {k}'s observations "
                                       f"{path_name(p) or ''} have shape {arr.shape[1:]} but "
                                       f"episode 0's have {obs[p].shape[1:] if p in obs else 'none'}")
            obs[p][t + k:t + k + steps + 1] = arr
        try:
            action[t:t + steps] = np.asarray(episode["actions"]).reshape((steps,) + act_shape)
        except ValueError as err:
            raise OfflineDataError(f"{where}: episode {k}'s actions do not fit the action space "
                                   f"{action_space} ({err})") from None
        reward[t:t + steps] = episode["rewards"]
        terminated[t:t + steps] = episode["terminations"]
        truncated[t:t + steps] = episode["truncations"]
        obs_row[t:t + steps] = np.arange(t + k, t + k + steps)
        starts[k] = t
        t += steps
        k += 1
    if k != n_episodes or t != n_steps:
        raise OfflineDataError(f"{where}: {k} episodes of {t} transitions where {n_episodes} "
                               f"episodes of {n_steps} were announced; its metadata is stale")
    starts[n_episodes] = n_steps
    return Packed(obs, action, reward, terminated, truncated, obs_row, starts)
