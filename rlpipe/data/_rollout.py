"""`RolloutStorage`: a fixed-length on-policy rollout [n_steps, n_envs] with GAE."""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, Mapping, Optional, Union

import numpy as np

from ._gae import compute_gae
from ._tree import Path, as_rows, flatten, path_name, unflatten

ValueFn = Callable[[Any], Any]
_NOT_IN_MINIBATCH = ("next_obs", "next_value", "valid")


class RolloutStorage:
    """Collects `n_steps` vector steps of `n_envs` envs, then computes GAE and serves minibatches.

    `add(step)` takes a dict with leading dim n_envs: obs, action, reward, terminated, truncated,
    value (V(obs) from the acting policy), and either next_obs (the true next observation,
    the final one where an episode ended) or next_value (V of it); plus any extras (logp ...)
    and optionally "valid" (bool; rows with False are kept out of the minibatches).

    `compute(gamma, lam, value_fn)` fills "advantage" and "return". The value of each step's
    next observation is the next row's "value" when the episode goes on; where it was
    truncated, and after the last step, `value_fn(next_obs rows)` gives it (one batched call).
    A terminated step does not bootstrap.
    """

    def __init__(self, n_steps: int, n_envs: int) -> None:
        for name, val in (("n_steps", n_steps), ("n_envs", n_envs)):
            if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val < 1:
                raise ValueError(f"RolloutStorage: {name} must be a positive int, got {val!r}")
        self.n_steps, self.n_envs = int(n_steps), int(n_envs)
        self._arrays: Optional[Dict[Path, np.ndarray]] = None
        self._t = 0
        self._computed = False

    @property
    def full(self) -> bool:
        """True when n_steps steps have been added."""
        return self._t == self.n_steps

    def __len__(self) -> int:
        """Steps added so far (each holds n_envs rows)."""
        return self._t

    @property
    def data(self) -> Dict[str, Any]:
        """The steps added so far: nested dict of arrays [len, n_envs, ...] (views, not copies)."""
        if self._arrays is None:
            return {}
        return unflatten({p: a[:self._t] for p, a in self._arrays.items()})

    def clear(self) -> None:
        """Start a new rollout: no step held, nothing computed (the arrays of the added keys are
        reused; the computed "advantage"/"return" go, so the next rollout adds the same keys)."""
        self._t = 0
        self._computed = False
        if self._arrays is not None:
            self._arrays.pop(("advantage",), None)
            self._arrays.pop(("return",), None)

    def add(self, step: Mapping[str, Any]) -> None:
        """Append one vector step (leading dim n_envs)."""
        if self.full:
            raise RuntimeError(f"RolloutStorage.add: the storage is full (n_steps={self.n_steps}); call "
                               "compute(...) and use minibatches(...), then clear() before adding more")
        rows, n = as_rows(flatten(step), "RolloutStorage.add")
        if n != self.n_envs:
            raise ValueError(f"RolloutStorage.add: the step has {n} rows, expected n_envs={self.n_envs}")
        if self._arrays is None:
            for key in ("reward", "terminated", "truncated", "value"):
                if (key,) not in rows:
                    raise KeyError(f"RolloutStorage.add: the step lacks key {key!r}; a step needs obs, "
                                   "action, reward, terminated, truncated, value and next_obs (or "
                                   "next_value)")
            self._arrays = {p: np.zeros((self.n_steps,) + a.shape, dtype=a.dtype) for p, a in rows.items()}
        elif rows.keys() != self._arrays.keys():
            diff = sorted(path_name(p) for p in set(rows) ^ set(self._arrays))
            raise KeyError(f"RolloutStorage.add: keys {diff} differ from the first step's; add the same "
                           "keys every step")
        for path, arr in rows.items():
            store = self._arrays[path]
            if arr.shape != store.shape[1:]:
                raise ValueError(f"RolloutStorage.add: key {path_name(path)!r} has shape {arr.shape}, "
                                 f"the first step's was {store.shape[1:]}")
            store[self._t] = arr
        self._t += 1
        self._computed = False

    def _next_values(self, value_fn: Optional[ValueFn]) -> np.ndarray:
        a = self._arrays
        assert a is not None
        T = self._t
        if ("next_value",) in a:
            return a[("next_value",)][:T].astype(np.float64)
        values = a[("value",)][:T].astype(np.float64).reshape(T, self.n_envs)
        term = a[("terminated",)][:T].reshape(T, self.n_envs)
        trunc = a[("truncated",)][:T].reshape(T, self.n_envs)
        valid = a[("valid",)][:T] if ("valid",) in a else np.ones((T, self.n_envs), bool)
        next_values = np.zeros((T, self.n_envs))
        next_values[:-1] = values[1:]
        need = ~term & valid & trunc
        need[-1] = ~term[-1] & valid[-1]
        if not need.any():
            return next_values
        if value_fn is None:
            raise ValueError("RolloutStorage.compute: value_fn is needed to bootstrap truncated episodes "
                             "and the last step from V(next_obs); pass value_fn=<obs batch -> values>, "
                             "or add 'next_value' to every step")
        if not any(p[0] == "next_obs" for p in a):
            raise KeyError("RolloutStorage.compute: bootstrapping needs 'next_obs' in the steps (or "
                           "'next_value')")
        t_idx, e_idx = np.nonzero(need)
        if ("next_obs",) in a:
            obs: Any = a[("next_obs",)][t_idx, e_idx]
        else:
            obs = unflatten({p[1:]: arr[t_idx, e_idx] for p, arr in a.items() if p[0] == "next_obs"})
        got = np.asarray(value_fn(obs), dtype=np.float64).reshape(-1)
        if got.shape[0] != t_idx.shape[0]:
            raise ValueError(f"RolloutStorage.compute: value_fn returned {got.shape[0]} values for "
                             f"{t_idx.shape[0]} observations")
        next_values[t_idx, e_idx] = got
        return next_values

    def compute(self, gamma: float, lam: float, value_fn: Optional[ValueFn] = None) -> None:
        """Fill "advantage" and "return" (float32 [len, n_envs]) for the steps added."""
        if self._t == 0 or self._arrays is None:
            raise RuntimeError("RolloutStorage.compute: no steps added yet")
        a, T = self._arrays, self._t
        shape = (T, self.n_envs)
        valid = a[("valid",)][:T] if ("valid",) in a else None
        adv, ret = compute_gae(a[("reward",)][:T].reshape(shape), a[("value",)][:T].reshape(shape),
                               self._next_values(value_fn).reshape(shape),
                               a[("terminated",)][:T].reshape(shape), a[("truncated",)][:T].reshape(shape),
                               gamma, lam, valid=valid)
        for key, arr in (("advantage", adv), ("return", ret)):
            a.setdefault((key,), np.zeros((self.n_steps, self.n_envs), np.float32))[:T] = arr
        self._computed = True

    def minibatches(self, batch_size: int, rng: Union[np.random.Generator, int, None] = None,
                    ) -> Iterator[Dict[str, Any]]:
        """Shuffled minibatches over all valid rows (len * n_envs of them), each a nested dict of
        arrays [batch_size, ...] (the last may be smaller). next_obs is left out."""
        if not self._computed:
            raise RuntimeError("RolloutStorage.minibatches: call compute(gamma, lam, value_fn) first")
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"RolloutStorage.minibatches: batch_size must be a positive int, got {batch_size!r}")
        assert self._arrays is not None
        T = self._t
        flat = {p: arr[:T].reshape((T * self.n_envs,) + arr.shape[2:])
                for p, arr in self._arrays.items() if p[0] not in _NOT_IN_MINIBATCH}
        rows = np.arange(T * self.n_envs)
        if ("valid",) in self._arrays:
            rows = rows[self._arrays[("valid",)][:T].reshape(-1)]
        gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        rows = gen.permutation(rows)
        for start in range(0, rows.shape[0], batch_size):
            pick = rows[start:start + batch_size]
            yield unflatten({p: arr[pick] for p, arr in flat.items()})
