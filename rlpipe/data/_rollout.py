"""`RolloutStorage`: an on-policy rollout [n_steps, n_envs] and the one place that turns it into
a GAE batch (gae_estimator builds its batch here too)."""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Set, Union

import numpy as np

from ._gae import compute_gae
from ._rollout_chunks import chunk_minibatches, rollout_chunks
from ._tree import Path, as_rows, flatten, path_name, unflatten

ValueFn = Callable[..., Any]
_NOT_IN_BATCH = ("next_obs", "next_value", "valid", "next_global_state", "next_agent_mask")
# Multi-agent steps: a row mask over the trailing agent axis, and what V needs beside obs.
_ROW_MASK = "agent_mask"
_VALUE_INPUTS = ("global_state", "agent_mask")
_REQUIRED = ("reward", "terminated", "truncated")
_COMPUTED = (("advantage",), ("return",))


class RolloutStorage:
    """Holds `n_steps` vector steps of `n_envs` envs, computes GAE, and hands the rollout out as
    one batch (`batch()`) or as shuffled minibatches (`minibatches()`).

    Fill it step by step with `add(step)`, or all at once with `RolloutStorage.from_steps(steps)`
    (a list of per-step dicts, as StepCollector leaves in ctx.trajectories). A step is a dict
    with leading dim n_envs: obs, action, reward, terminated, truncated, and either next_obs
    (the true next observation, the final one where an episode ended) or next_value (V of it);
    plus value (V(obs) from the acting policy; without it `compute` asks `value_fn`), any extras
    (logp ...) and optionally "valid" (bool; rows with False are not transitions). Rewards are
    kept as float32, multiplied by `reward_scale`.

    `compute(gamma, lam, value_fn)` fills "advantage" and "return". The value of each step's
    next observation is the next row's "value" while the episode goes on; where it was
    truncated, and after the last step, `value_fn(next_obs rows)` gives it (one batched call).
    A terminated step does not bootstrap. Rewards, values and next values enter the estimate
    as float32 (what policies output); `compute_gae` works in float64.

    Agent axis (multi-agent steps): reward, terminated, truncated, value ... may have trailing
    batch dims beyond [n_envs] (e.g. [n_envs, A]); GAE then runs per (env, agent). A step's
    "agent_mask" (bool, same shape as reward) marks the rows that are real transitions (a gone
    agent's rows are not; they get advantage 0 and cut its recursion), and an agent that is not
    done but absent in the next row bootstraps from `value_fn(next_obs)`. Each `value_fn` call
    then gets env rows [k, A, ...] and returns [k, A]; where the steps carry "global_state" /
    "agent_mask" they are passed as keywords (their "next_" forms with next_obs). The batch
    keeps env rows (valid ones) with the agent axis.
    """

    def __init__(self, n_steps: int, n_envs: int, reward_scale: float = 1.0) -> None:
        for name, val in (("n_steps", n_steps), ("n_envs", n_envs)):
            if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val < 1:
                raise ValueError(f"RolloutStorage: {name} must be a positive int, got {val!r}")
        if not np.isfinite(reward_scale) or reward_scale <= 0:
            raise ValueError(f"RolloutStorage: reward_scale must be a finite number > 0, got "
                             f"{reward_scale!r}")
        self.n_steps, self.n_envs = int(n_steps), int(n_envs)
        self.reward_scale = np.float32(reward_scale)
        self._arrays: Optional[Dict[Path, np.ndarray]] = None
        self._computed_paths: Set[Path] = set()  # filled by compute(); cleared by clear()
        self._t = 0
        self._computed = False

    @classmethod
    def from_steps(cls, steps: Sequence[Mapping[str, Any]],
                   reward_scale: float = 1.0) -> "RolloutStorage":
        """A full storage holding `steps` (each a dict of arrays with leading dim n_envs, the
        same keys every step): one `np.stack` per key, n_steps = len(steps)."""
        owner = "RolloutStorage.from_steps"
        if not steps:
            raise ValueError(f"{owner}: no steps given; pass a non-empty list of step dicts")
        flats = [flatten(step) for step in steps]
        keys = flats[0].keys()
        for t, flat in enumerate(flats):
            if flat.keys() != keys:
                raise KeyError(f"{owner}: step {t} has keys {_names(flat)}, step 0 has "
                               f"{_names(flats[0])}; every step needs the same keys")
        first, n_envs = as_rows(flats[0], owner)
        store = cls(len(steps), n_envs, reward_scale)
        store._check_required(first, owner)
        arrays = {}
        for path in keys:
            try:
                arrays[path] = np.stack([flat[path] for flat in flats])
            except ValueError as err:
                raise ValueError(f"{owner}: key {path_name(path)!r} does not have the same shape "
                                 f"in every step ({err}); give it one shape [n_envs, ...]") from err
        arrays[("reward",)] = store._scaled(arrays[("reward",)])
        store._arrays, store._t = arrays, len(steps)
        return store

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
        reused; what compute() filled in goes, so the next rollout adds the same keys)."""
        self._t = 0
        self._computed = False
        if self._arrays is not None:
            for path in self._computed_paths:
                self._arrays.pop(path, None)
        self._computed_paths.clear()

    def add(self, step: Mapping[str, Any]) -> None:
        """Append one vector step (leading dim n_envs)."""
        if self.full:
            raise RuntimeError(f"RolloutStorage.add: the storage is full (n_steps={self.n_steps}); call "
                               "compute(...) and use minibatches(...), then clear() before adding more")
        rows, n = as_rows(flatten(step), "RolloutStorage.add")
        if n != self.n_envs:
            raise ValueError(f"RolloutStorage.add: the step has {n} rows, expected n_envs={self.n_envs}")
        if self._arrays is None:
            self._check_required(rows, "RolloutStorage.add")
        elif rows.keys() != self._arrays.keys():
            diff = sorted(path_name(p) for p in set(rows) ^ set(self._arrays))
            raise KeyError(f"RolloutStorage.add: keys {diff} differ from the first step's; add the same "
                           "keys every step")
        rows[("reward",)] = self._scaled(rows[("reward",)])
        if self._arrays is None:
            self._arrays = {p: np.zeros((self.n_steps,) + a.shape, dtype=a.dtype) for p, a in rows.items()}
        for path, arr in rows.items():
            store = self._arrays[path]
            if arr.shape != store.shape[1:]:
                raise ValueError(f"RolloutStorage.add: key {path_name(path)!r} has shape {arr.shape}, "
                                 f"the first step's was {store.shape[1:]}")
            store[self._t] = arr
        self._t += 1
        self._computed = False

    # --- GAE ---------------------------------------------------------------------------------------
    def compute(self, gamma: float, lam: float, value_fn: Optional[ValueFn] = None) -> None:
        """Fill "advantage" and "return" (float32 [len, n_envs]) for the steps added; and "value"
        (V(obs), one batched `value_fn` call) when the steps carry none."""
        if self._t == 0 or self._arrays is None:
            raise RuntimeError("RolloutStorage.compute: no steps added yet")
        a, T, N = self._arrays, self._t, self.n_envs
        shape = (T, N) + self._extra()
        if ("value",) not in a:
            pick = lambda arr: arr[:T].reshape((T * N,) + arr.shape[2:])  # noqa: E731
            obs = self._select("obs", pick)
            values = np.zeros((self.n_steps,) + shape[1:], np.float32)
            values[:T] = _call(value_fn, obs, T * N, shape[2:], self._value_inputs("", pick),
                               "the observations (the steps carry no 'value')").reshape(shape)
            a[("value",)] = values
            self._computed_paths.add(("value",))
        values = a[("value",)][:T].reshape(shape).astype(np.float32)
        valid = self._row_mask()
        adv, ret = compute_gae(a[("reward",)][:T].reshape(shape), values,
                               self._next_values(values, value_fn),
                               a[("terminated",)][:T].reshape(shape),
                               a[("truncated",)][:T].reshape(shape), gamma, lam, valid=valid)
        for path, arr in zip(_COMPUTED, (adv, ret)):
            a.setdefault(path, np.zeros((self.n_steps,) + shape[1:], np.float32))[:T] = arr
            self._computed_paths.add(path)
        self._computed = True

    def _extra(self) -> tuple:
        """The trailing batch dims beyond [n_envs] (the agent axis: (A,)), from the rewards."""
        assert self._arrays is not None
        return self._arrays[("reward",)].shape[2:]

    def _row_mask(self) -> Optional[np.ndarray]:
        """Which rows are transitions, [T, n_envs, *extra] (None: all): "valid" (env rows)
        and, with an agent axis, "agent_mask"."""
        a, T = self._arrays, self._t
        assert a is not None
        valid = a[("valid",)][:T].astype(bool) if ("valid",) in a else None
        if (_ROW_MASK,) not in a:
            return valid
        rows = a[(_ROW_MASK,)][:T].astype(bool)
        if valid is None:
            return rows
        return rows & valid.reshape(valid.shape + (1,) * (rows.ndim - valid.ndim))

    def _value_inputs(self, prefix: str, pick: Callable[[np.ndarray], np.ndarray]) -> Dict[str, Any]:
        """Keywords of `value_fn` beside the observations: the steps' global_state/agent_mask
        (`prefix` "next_": their next_ forms), picked at the same rows."""
        assert self._arrays is not None
        out = {}
        for key in _VALUE_INPUTS:
            name = prefix + key if any(p[0] == prefix + key for p in self._arrays) else key
            if any(p[0] == name for p in self._arrays):
                out[key] = self._select(name, pick)
        return out

    def _next_values(self, values: np.ndarray, value_fn: Optional[ValueFn]) -> np.ndarray:
        """V(true next obs) per row, float32 [T, n_envs, *extra]: the next row's value while the
        episode goes on, `value_fn(next_obs)` for truncated steps and the last step (and, with
        an agent axis, an agent not done but absent from the next row), in one call."""
        a, T = self._arrays, self._t
        assert a is not None
        shape = (T, self.n_envs) + self._extra()
        if ("next_value",) in a:
            return a[("next_value",)][:T].reshape(shape).astype(np.float32)
        term = a[("terminated",)][:T].reshape(shape).astype(bool)
        trunc = a[("truncated",)][:T].reshape(shape).astype(bool)
        valid = self._row_mask()
        valid = np.ones(shape, bool) if valid is None else np.broadcast_to(valid, shape)
        next_values = np.zeros(shape, np.float32)
        next_values[:-1] = values[1:]  # obs[t + 1] is next_obs[t] while the episode goes on
        need = ~term & valid & trunc
        if (_ROW_MASK,) in a:  # gone from the next row without an end of its own: bootstrap
            need[:-1] |= ~term[:-1] & valid[:-1] & ~valid[1:]
        need[-1] = ~term[-1] & valid[-1]
        if need.any():
            rows = need.reshape(T, self.n_envs, -1).any(-1)  # env rows with an agent to value
            t_idx, e_idx = np.nonzero(rows)
            pick = lambda arr: arr[t_idx, e_idx]  # noqa: E731
            got = _call(value_fn, self._select("next_obs", pick), t_idx.shape[0], shape[2:],
                        self._value_inputs("next_", pick),
                        "the next observation of truncated and last steps")
            sel = need[t_idx, e_idx]
            next_values[t_idx, e_idx] = np.where(sel, got.reshape(sel.shape),
                                                 next_values[t_idx, e_idx])
        return next_values

    def _select(self, key: str, pick: Callable[[np.ndarray], np.ndarray]) -> Any:
        """`pick` applied to the array of `key` (or to each leaf of a nested key)."""
        assert self._arrays is not None
        if (key,) in self._arrays:
            return pick(self._arrays[(key,)])
        leaves = {p[1:]: pick(arr) for p, arr in self._arrays.items() if p[0] == key}
        if not leaves:
            raise KeyError(f"RolloutStorage.compute: the steps lack {key!r} (they have "
                           f"{_names(self._arrays)}); add it to every step, or add 'value' and "
                           "'next_value' so that no value needs computing")
        return unflatten(leaves)

    # --- batches -----------------------------------------------------------------------------------
    def batch(self) -> Dict[str, Any]:
        """Every valid row, step-major (row = t·n_envs + env), as a nested dict of arrays (copies):
        each added key but next_obs/next_value/valid, plus "advantage" and "return"."""
        rows = self._rows("batch")
        return unflatten({p: arr[rows] for p, arr in self._flat().items()})

    def minibatches(self, batch_size: int, rng: Union[np.random.Generator, int, None] = None,
                    ) -> Iterator[Dict[str, Any]]:
        """Shuffled minibatches over all valid rows (len * n_envs of them), each a nested dict of
        arrays [batch_size, ...] (the last may be smaller), with the keys of `batch()`."""
        rows = self._rows("minibatches")
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"RolloutStorage.minibatches: batch_size must be a positive int, got {batch_size!r}")
        flat = self._flat()
        gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        rows = gen.permutation(rows)
        for start in range(0, rows.shape[0], batch_size):
            pick = rows[start:start + batch_size]
            yield unflatten({p: arr[pick] for p, arr in flat.items()})

    def sequence_minibatches(self, chunk_len: int, n_minibatches: int,
                             rng: Union[np.random.Generator, int, None] = None, *,
                             chunks: Optional[Mapping[str, Any]] = None,
                             ) -> Iterator[Dict[str, Any]]:
        """For a recurrent policy: each env's time line cut into chunks of `chunk_len` steps (the
        last padded), shuffled into `n_minibatches` minibatches of whole chunks. Each holds the
        per-step keys of `batch()` as [B, chunk_len, ...] with "advantage" and "return" (GAE over
        the whole rollout, as `compute` made them), "state" [B, ...] (the recorded state at each
        chunk's first step), "first" [B, chunk_len] (reset the state inside a chunk where it is
        True) and "mask" [B, chunk_len] (False on padding and on rows with valid=False).
        `chunks`: this rollout's `sequence_chunks(chunk_len)` converted once (to torch tensors,
        say) by a learner that takes several epochs of minibatches; they are cut from it, with
        the same draws."""
        if chunks is None:
            flat = rollout_chunks(self._arrays_for("sequence_minibatches"), self._t, self.n_envs,
                                  _chunk_len(chunk_len, "sequence_minibatches"))
        elif "mask" not in chunks:
            raise KeyError(f"RolloutStorage.sequence_minibatches: chunks has no 'mask' (it has "
                           f"{sorted(chunks)}); pass sequence_chunks(chunk_len), converted, with "
                           "its 'mask' (which steps are real) kept")
        else:
            flat = flatten(chunks)
        return chunk_minibatches(flat, n_minibatches, rng)

    def sequence_chunks(self, chunk_len: int) -> Dict[str, Any]:
        """Every chunk that `sequence_minibatches` draws from, env-major (chunk c of env e is row
        e · ⌈len / chunk_len⌉ + c), as one nested dict with its keys: [C, chunk_len, ...], and
        "state" [C, ...]."""
        return unflatten(rollout_chunks(self._arrays_for("sequence_chunks"), self._t,
                                        self.n_envs, _chunk_len(chunk_len, "sequence_chunks")))

    def _arrays_for(self, caller: str) -> Dict[Path, np.ndarray]:
        if not self._computed:
            raise RuntimeError(f"RolloutStorage.{caller}: call compute(gamma, lam, value_fn) first")
        assert self._arrays is not None
        return self._arrays

    def _rows(self, caller: str) -> np.ndarray:
        """Indices of the valid rows among the len·n_envs flattened ones, in order."""
        if not self._computed:
            raise RuntimeError(f"RolloutStorage.{caller}: call compute(gamma, lam, value_fn) first")
        assert self._arrays is not None
        if ("valid",) in self._arrays:
            return np.flatnonzero(self._arrays[("valid",)][:self._t].reshape(-1).astype(bool))
        return np.arange(self._t * self.n_envs)

    def _flat(self) -> Dict[Path, np.ndarray]:
        assert self._arrays is not None
        T = self._t
        return {p: arr[:T].reshape((T * self.n_envs,) + arr.shape[2:])
                for p, arr in self._arrays.items() if p[0] not in _NOT_IN_BATCH}

    # --- checks ------------------------------------------------------------------------------------
    def _check_required(self, rows: Mapping[Path, np.ndarray], owner: str) -> None:
        for key in _REQUIRED:
            if (key,) not in rows:
                raise KeyError(f"{owner}: the step lacks key {key!r} (it has {_names(rows)}); a step "
                               "needs obs, action, reward, terminated, truncated, and next_obs (or "
                               "next_value), with value where the policy gives one")

    def _scaled(self, reward: np.ndarray) -> np.ndarray:
        """Rewards as float32, times reward_scale (when it is not 1)."""
        reward = np.asarray(reward).astype(np.float32, copy=False)
        return reward if self.reward_scale == 1 else reward * self.reward_scale


def _chunk_len(chunk_len: Any, caller: str) -> int:
    if isinstance(chunk_len, bool) or not isinstance(chunk_len, (int, np.integer)) or chunk_len < 1:
        raise ValueError(f"RolloutStorage.{caller}: chunk_len must be a positive int, "
                         f"got {chunk_len!r}")
    return int(chunk_len)


def _call(value_fn: Optional[ValueFn], obs: Any, n: int, extra: tuple, kwargs: Mapping[str, Any],
          what: str) -> np.ndarray:
    """`value_fn(obs, **kwargs)` as a flat float32 array of n·prod(extra) values (one per row
    and agent), or an error saying what is wrong."""
    if value_fn is None:
        raise ValueError(f"RolloutStorage.compute: value_fn is needed for the values of {what}; "
                         "pass value_fn=<obs batch -> values>, or add 'value' (and 'next_value') "
                         "to every step")
    got = np.asarray(value_fn(obs, **kwargs), dtype=np.float32).reshape(-1)
    want = n * int(np.prod(extra, dtype=np.int64))
    if got.shape[0] != want:
        per = f" of {extra[0]} agents" if len(extra) == 1 else ""
        raise ValueError(f"RolloutStorage.compute: value_fn returned {got.shape[0]} values for "
                         f"{n} observation rows{per}; it must return one value per row "
                         f"(and agent: shape [rows, {', '.join(map(str, extra))}])"
                         if extra else
                         f"RolloutStorage.compute: value_fn returned {got.shape[0]} values for "
                         f"{n} observations; it must return one value per row")
    return got


def _names(flat: Mapping[Path, Any]) -> List[str]:
    return sorted({path_name(p) for p in flat})
