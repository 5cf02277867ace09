"""`StepSequenceBuffer`: holds each env's steps in time order and cuts sequences with burn-in
when it samples (DI-engine's shape for R2D2: `data_pusher(cfg, buffer_, group_by_env=True)`
then `OffPolicyLearner(cfg, policy, buffer_)`)."""
from __future__ import annotations

import threading
from typing import Any, Dict, List, Mapping, Optional

import numpy as np

from rlpipe.random_streams import REPLAY, numpy_rng, seed_or_draw

from ._locked import PicklesWithoutLock
from ._replay import _check_capacity
from ._sequences import _int
from ._storage import ArrayStorage
from ._tree import unflatten

_NEEDED = ("env_id", "first", "terminated", "truncated", "state")


class StepSequenceBuffer(PicklesWithoutLock):
    """Step rows of a recurrent policy, kept per env in time order; `sample` cuts windows of
    `burn_in + seq_len` steps from them, each inside one env's episode.

    `push(rows)` takes transition rows as `data_pusher(cfg, buffer_, group_by_env=True)` pushes
    them: a dict of [B, ...] arrays with `env_id` (which env of the manager made the row),
    `first` (the row's obs starts an episode), `terminated`, `truncated` and `state` (the
    recurrent state input to the step, as the acting path records it for a recurrent policy),
    the rows of one env in time order. A full buffer overwrites its oldest steps.

    `sample(batch_size)` draws window starts uniformly (with replacement) among the held steps
    whose episode goes on, within the buffer, for more than `burn_in` steps, so every window has
    a step to learn from. A window holds that env's next `burn_in + seq_len` steps and stops
    after a terminated or truncated step, before a `first` step, or at the env's newest step;
    `mask` [B, L] is False on the rest, which is zeros. It returns per-step fields [B, L, ...],
    `state` [B, ...] (the recorded state at each window's start), `mask`, `burn_in` (int) and
    `index` (the storage slot of each window's start), as `SequenceReplayBuffer.sample` does,
    so `R2D2Policy` learns on it. `len()` is the number of window starts that can be drawn.

    Thread-safe for one writer and one reader running concurrently (a lock covers push and
    sample), so an async pipeline collects while it learns.
    """

    prioritized = False

    def __init__(self, capacity: int, seq_len: int, burn_in: int, seed: Optional[int] = None) -> None:
        owner = "StepSequenceBuffer"
        self._capacity = _check_capacity(capacity, owner)
        self.seq_len = _int(seq_len, "seq_len", 1, owner)
        self.burn_in = _int(burn_in, "burn_in", 0, owner)
        self.length = self.seq_len + self.burn_in
        if self.length > self._capacity:
            raise ValueError(f"{owner}: capacity {capacity} holds fewer steps than one sequence "
                             f"(burn_in {burn_in} + seq_len {seq_len}); raise the capacity")
        self._storage = ArrayStorage(self._capacity, owner)
        self._slot_env = np.full(self._capacity, -1, np.int64)  # env of the step in each slot
        self._lines: Dict[int, List[int]] = {}  # env → its held slots, oldest first
        self._pos = 0
        self._size = 0
        self._starts: Optional[np.ndarray] = None  # [n, 2]: (env, position in its line)
        self._runs: Dict[int, np.ndarray] = {}  # env → steps left in the episode from each position
        # the sampling stream of `seed` (env 0, seeded `seed`, has the seed's own stream); with
        # no seed, from NumPy's global RNG: a script seeded with set_pkg_seed repeats
        self._rng = numpy_rng(seed_or_draw(seed, "numpy"), REPLAY)
        self._lock = threading.Lock()

    @property
    def capacity(self) -> int:
        """Most steps held; the oldest are overwritten beyond it."""
        return self._capacity

    @property
    def steps(self) -> int:
        """Steps held."""
        return self._size

    def __len__(self) -> int:
        """Window starts that `sample` can draw (each has a step after burn-in)."""
        with self._lock:
            return len(self._window_starts())

    # -- writing --------------------------------------------------------------------------
    def push(self, rows: Mapping[str, Any]) -> None:
        """Store B step rows (see the class doc); rows of one env must come in time order."""
        owner = "StepSequenceBuffer.push"
        if not isinstance(rows, Mapping):
            raise TypeError(f"{owner} takes a dict of step rows, got {type(rows).__name__}")
        for key in _NEEDED:
            if key not in rows:
                hint = ("push with data_pusher(cfg, buffer_, group_by_env=True)" if key == "env_id"
                        else "collect with a recurrent policy (e.g. R2D2Policy), whose steps "
                             "record first and state")
                raise KeyError(f"{owner}: the rows lack {key!r} (they have {sorted(rows)}); {hint}")
        flat, n = self._storage.prepare(rows)
        if n > self._capacity:
            raise ValueError(f"{owner}: {n} rows exceed the capacity {self._capacity}; raise it")
        env = np.asarray(rows["env_id"], np.int64).reshape(-1)
        with self._lock:
            if self._storage.arrays is None:
                self._storage.allocate(flat)
            slots = (self._pos + np.arange(n)) % self._capacity
            for old in self._slot_env[slots][self._size + np.arange(n) >= self._capacity]:
                self._lines[int(old)].pop(0)  # the oldest step is the oldest of its env
            self._storage.write(flat, self._pos)
            self._slot_env[slots] = env
            for slot, e in zip(slots.tolist(), env.tolist()):
                self._lines.setdefault(e, []).append(slot)
            self._pos = (self._pos + n) % self._capacity
            self._size = min(self._size + n, self._capacity)
            self._starts = None

    # -- reading --------------------------------------------------------------------------
    def _window_starts(self) -> np.ndarray:
        """(env, position) of the steps a window may start at; cached until the next push."""
        if self._starts is not None:
            return self._starts
        arrays = self._storage.arrays
        starts, self._runs = [], {}
        for e, line in self._lines.items():
            if not line:
                continue
            slots = np.asarray(line)
            first = arrays[("first",)][slots].astype(bool)
            end = arrays[("terminated",)][slots].astype(bool) | arrays[("truncated",)][slots].astype(bool)
            # steps from each position to the last held step of its episode: a run of steps
            # ends at a terminated/truncated step, before a first step, and at the newest step
            last = end.copy()
            last[:-1] |= first[1:]
            last[-1] = True
            segment = np.concatenate([[0], np.cumsum(last[:-1])])
            run = np.flatnonzero(last)[segment] - np.arange(len(slots)) + 1
            self._runs[e] = run
            ok = np.flatnonzero(run > self.burn_in)
            starts.append(np.stack([np.full(len(ok), e), ok], 1))
        self._starts = np.concatenate(starts) if starts else np.zeros((0, 2), np.int64)
        return self._starts

    def sample(self, batch_size: int) -> Dict[str, Any]:
        """`batch_size` windows (see the class doc)."""
        with self._lock:
            starts = self._window_starts()
            if len(starts) == 0:
                raise ValueError(f"StepSequenceBuffer.sample: no window can be cut yet ({self._size} "
                                 f"steps held; a window needs an episode of more than burn_in "
                                 f"{self.burn_in} steps); push more steps first")
            pick = starts[self._rng.integers(0, len(starts), batch_size)]
            index = np.zeros((batch_size, self.length), np.int64)
            mask = np.zeros((batch_size, self.length), bool)
            for b, (e, i) in enumerate(pick.tolist()):
                k = min(int(self._runs[e][i]), self.length)
                line = self._lines[e]
                index[b, :k] = line[i:i + k]
                index[b, k:] = line[i]  # padding, zeroed below
                mask[b, :k] = True
            flat = {p: a[index] for p, a in self._storage.arrays.items()}
        out: Dict[Any, np.ndarray] = {}
        for path, arr in flat.items():
            if path[0] == "state":
                out[path] = arr[:, 0]
            else:
                arr[~mask] = 0
                out[path] = arr
        batch = unflatten(out)
        batch.update(mask=mask, burn_in=self.burn_in, index=index[:, 0])
        return batch

    def __repr__(self) -> str:
        return (f"StepSequenceBuffer(capacity={self._capacity}, steps={self._size}, seq_len="
                f"{self.seq_len}, burn_in={self.burn_in})")

