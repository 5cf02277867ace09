"""n-step transitions: a streaming, per-env accumulator and a pure reference over one trajectory."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

from ._tree import Path, flatten, path_name, unflatten

_STEP_ONLY = ("reward", "terminated", "truncated", "next_obs", "valid")


def nstep_targets(rewards: Any, terminated: Any, truncated: Any, n: int,
                  gamma: float) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n-step returns over one trajectory of T steps (a plain loop: the reference for tests).

    For step t the window runs over steps t, t+1, ... and stops after n steps, at an episode
    end (terminated or truncated) or at the end of the trajectory, whichever comes first;
    say it stops after step e = t + m - 1. Returns three arrays of length T:

    - `returns[t] = sum_{k<m} gamma**k * rewards[t+k]`
    - `discounts[t] = 0` if step e terminated, else `gamma**m` (truncated: bootstrap)
    - `bootstrap[t] = e`: the target is `returns[t] + discounts[t] * V(next_obs[e])`.
    """
    rewards = np.asarray(rewards, dtype=np.float64)
    terminated = np.asarray(terminated, dtype=bool)
    truncated = np.asarray(truncated, dtype=bool)
    T = len(rewards)
    returns = np.zeros(T)
    discounts = np.zeros(T)
    bootstrap = np.zeros(T, dtype=np.int64)
    for t in range(T):
        g, m = 0.0, 0
        while True:
            e = t + m
            g += gamma ** m * rewards[e]
            m += 1
            if terminated[e]:
                d = 0.0
                break
            if truncated[e] or m == n or e == T - 1:
                d = gamma ** m
                break
        returns[t], discounts[t], bootstrap[t] = g, d, e
    return returns, discounts, bootstrap


class NStepAccumulator:
    """Turns a stream of vector-env steps into n-step transitions, per env, vectorised.

    `push(step)` takes one vector step: a dict with keys obs, action, reward, next_obs,
    terminated, truncated (plus extras such as logp or value), each with leading dim n_envs,
    and optionally "valid" (bool [n_envs]; rows with False are not transitions). It returns the
    n-step transitions that this step completed (a dict of arrays, rows ordered by env and, per
    env, oldest first), or None when none completed. Each transition has:

    - obs, action and the extras of its first step;
    - reward: the discounted sum over its m <= n steps;
    - next_obs: the observation m steps later; if the episode ended inside the window, the
      true final observation of the episode;
    - terminated / truncated: how the window ended (both False for a full window);
    - discount: 0.0 if terminated, else gamma**m. The target is reward + discount * V(next_obs).

    An episode end (terminated or truncated) flushes every pending window of that env. A row
    with valid=False (e.g. the env was restarted after a crash) flushes that env's pending
    windows as truncated, bootstrapping from that row's obs (the last real observation).
    """

    def __init__(self, n: int, gamma: float, n_envs: int) -> None:
        if int(n) != n or n < 1:
            raise ValueError(f"NStepAccumulator: n must be an int >= 1, got {n!r}")
        if int(n_envs) != n_envs or n_envs < 1:
            raise ValueError(f"NStepAccumulator: n_envs must be an int >= 1, got {n_envs!r}")
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"NStepAccumulator: gamma must be in [0, 1], got {gamma!r}")
        self.n, self.gamma, self.n_envs = int(n), float(gamma), int(n_envs)
        self._gamma_pow = self.gamma ** np.arange(self.n + 1)
        self._hist: Optional[Dict[Path, np.ndarray]] = None  # [n_envs, n, *row] per first-step key
        self._active = np.zeros((self.n_envs, self.n), dtype=bool)
        self._age = np.zeros((self.n_envs, self.n), dtype=np.int64)  # steps accumulated so far
        self._acc = np.zeros((self.n_envs, self.n), dtype=np.float64)  # discounted reward sums
        self._ptr = np.zeros(self.n_envs, dtype=np.int64)  # next free slot per env

    @property
    def pending(self) -> int:
        """Windows waiting for more steps, over all envs."""
        return int(self._active.sum())

    def clear(self) -> None:
        """Drop every pending window (e.g. after resetting all envs by hand): the next push
        starts fresh windows only, as on a new accumulator."""
        self._active[:] = False
        self._age[:] = 0
        self._acc[:] = 0.0
        self._ptr[:] = 0

    def _flags(self, step: Mapping[str, Any], key: str, dtype: type) -> np.ndarray:
        if key not in step:
            raise KeyError(f"NStepAccumulator.push: the step lacks key {key!r}; a step needs obs, action, "
                           "reward, next_obs, terminated and truncated (leading dim n_envs)")
        arr = np.asarray(step[key], dtype=dtype).reshape(-1)
        if arr.shape[0] != self.n_envs:
            raise ValueError(f"NStepAccumulator.push: key {key!r} has {arr.shape[0]} rows, "
                             f"expected n_envs={self.n_envs}")
        return arr

    def _first_step_rows(self, step: Mapping[str, Any]) -> Dict[Path, np.ndarray]:
        rows = {p: np.asarray(v) for p, v in flatten(step).items() if p[0] not in _STEP_ONLY}
        for path, arr in rows.items():
            if arr.ndim == 0 or arr.shape[0] != self.n_envs:
                raise ValueError(f"NStepAccumulator.push: key {path_name(path)!r} has shape {arr.shape}; "
                                 f"expected a leading dim of n_envs={self.n_envs}")
        if self._hist is None:
            if not any(p[0] == "obs" for p in rows):
                raise KeyError("NStepAccumulator.push: the step lacks key 'obs'")
            self._hist = {p: np.zeros((self.n_envs, self.n) + a.shape[1:], dtype=a.dtype)
                          for p, a in rows.items()}
        elif rows.keys() != self._hist.keys():
            diff = sorted(path_name(p) for p in set(rows) ^ set(self._hist))
            raise KeyError(f"NStepAccumulator.push: keys {diff} differ from the first step's; "
                           "push the same keys every step")
        return rows

    def push(self, step: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
        """Add one vector step; return the n-step transitions it completed (or None)."""
        reward = self._flags(step, "reward", np.float64)
        term = self._flags(step, "terminated", bool)
        trunc = self._flags(step, "truncated", bool)
        valid = self._flags(step, "valid", bool) if "valid" in step else np.ones(self.n_envs, bool)
        if "next_obs" not in step:
            raise KeyError("NStepAccumulator.push: the step lacks key 'next_obs' (the true next "
                           "observation, the final one where an episode ended)")
        rows = self._first_step_rows(step)
        hist = self._hist
        assert hist is not None

        v = np.flatnonzero(valid)
        slot = self._ptr[v]
        for path, arr in rows.items():
            hist[path][v, slot] = arr[v]
        self._active[v, slot] = True
        self._age[v, slot] = 0
        self._acc[v, slot] = 0.0
        live = self._active[v]
        self._acc[v] += np.where(live, self._gamma_pow[self._age[v]] * reward[v, None], 0.0)
        self._age[v] += live
        self._ptr[v] = (slot + 1) % self.n

        ends = (valid & (term | trunc)) | ~valid
        emit = self._active & (ends[:, None] | (self._age == self.n))
        if not emit.any():
            return None
        env, slot = np.nonzero(emit)
        age = self._age[env, slot]
        order = np.lexsort((-age, env))  # by env, then oldest first
        env, slot, age = env[order], slot[order], age[order]
        self._active[env, slot] = False

        out: Dict[Path, np.ndarray] = {p: h[env, slot] for p, h in hist.items()}
        out_term = term[env] & valid[env]
        out_trunc = (trunc[env] & valid[env]) | ~valid[env]
        out[("reward",)] = self._acc[env, slot].astype(np.float32)
        out[("terminated",)] = out_term
        out[("truncated",)] = out_trunc
        out[("discount",)] = np.where(out_term, 0.0, self._gamma_pow[age]).astype(np.float32)
        bad = ~valid[env]
        obs_now = {p[1:]: a for p, a in flatten(step).items() if p[0] == "obs"}
        for path, arr in flatten({"next_obs": step["next_obs"]}).items():
            nxt = np.asarray(arr)[env]
            if bad.any():
                nxt[bad] = np.asarray(obs_now[path[1:]])[env[bad]]
            out[path] = nxt
        return unflatten(out)
