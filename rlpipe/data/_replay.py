"""`ReplayBuffer`: uniform experience replay over preallocated ring storage."""
from __future__ import annotations

import threading
from typing import Any, Dict, Mapping, Optional

import numpy as np

from rlpipe.random_streams import REPLAY, numpy_rng, seed_or_draw

from ._locked import PicklesWithoutLock
from ._schedule import UpdateSchedule
from ._serialize import load_state, save_state
from ._storage import ArrayStorage

RESERVED_KEYS = ("index", "weight")
"""Keys that `sample` adds to a batch; a pushed batch may not use them."""


def _check_capacity(capacity: Any, owner: str) -> int:
    if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity <= 0:
        raise ValueError(f"{owner}: capacity must be a positive int (rows to hold), got {capacity!r}")
    return int(capacity)


class ReplayBuffer(PicklesWithoutLock):
    """Transitions in preallocated arrays; a full buffer overwrites its oldest rows.

    `push(batch)` takes a dict of arrays with a leading batch dim B (one row per transition;
    a nested observation is a nested dict of arrays). The first push lays the storage out
    (keys, row shapes, dtypes); later pushes must match it. `sample(batch_size)` draws rows
    uniformly with replacement and adds `"index"` (int64 row numbers); `seed` seeds that draw
    (None: a seed drawn from NumPy's global generator).

    `controller` (an `UpdateSchedule`, optional) is told every insert and every sample, and its
    counters are saved with the rows, so a learner's schedule resumes exactly.

    Thread-safe for one writer and one reader running concurrently: a lock covers the index
    math and the copies, so a sampled row is never half old and half new.
    """

    def __init__(self, capacity: int, seed: Optional[int] = None,
                 controller: Optional[UpdateSchedule] = None) -> None:
        name = type(self).__name__
        self._capacity = _check_capacity(capacity, name)
        self._storage = ArrayStorage(self._capacity, name)
        self._pos = 0
        self._size = 0
        self._pushes = 0
        # the sampling stream of `seed` (env 0, seeded `seed`, has the seed's own stream); with
        # no seed, from NumPy's global RNG: a script seeded with set_pkg_seed repeats
        self._rng = numpy_rng(seed_or_draw(seed, "numpy"), REPLAY)
        self.controller = controller
        self._lock = threading.Lock()

    # -- properties -----------------------------------------------------------------------
    @property
    def capacity(self) -> int:
        """Most rows held; the oldest are overwritten beyond it."""
        return self._capacity

    @property
    def position(self) -> int:
        """The row the next push writes first."""
        return self._pos

    def __len__(self) -> int:
        return self._size

    # -- writing --------------------------------------------------------------------------
    def push(self, batch: Mapping[str, Any]) -> None:
        """Append B transitions (a dict of arrays with leading dim B), overwriting the oldest."""
        self._push(batch, None)

    def _push(self, batch: Mapping[str, Any], per_row: Optional[np.ndarray]) -> None:
        """Write `batch`; `per_row` (one value per row, or None) goes to `_on_write` with the
        rows that were kept, for a subclass's bookkeeping (a prioritized buffer's priorities)."""
        for key in RESERVED_KEYS:
            if isinstance(batch, Mapping) and key in batch:
                raise KeyError(f"{type(self).__name__}.push: key {key!r} is reserved (sample adds it); "
                               "rename it or drop it before pushing a sampled batch back")
        with self._lock:
            rows, n = self._storage.prepare(batch)
            if n == 0:
                return
            if per_row is not None and len(per_row) != n:
                raise ValueError(f"{type(self).__name__}.push: {n} rows but {len(per_row)} "
                                 f"priorities; pass one priority per row")
            if self._storage.arrays is None:
                self._storage.allocate(rows)
            start, kept = self._pos, n
            if n > self._capacity:  # only the newest `capacity` rows survive
                kept = self._capacity
                rows = {p: a[n - kept:] for p, a in rows.items()}
                start = (self._pos + n - kept) % self._capacity
            self._storage.write(rows, start)
            self._pushes += 1
            self._on_write((start + np.arange(kept)) % self._capacity,
                           None if per_row is None else per_row[n - kept:])
            self._pos = (self._pos + n) % self._capacity
            self._size = min(self._size + n, self._capacity)
            if self.controller is not None:
                self.controller.on_insert(n)

    def _on_write(self, rows: np.ndarray, per_row: Optional[np.ndarray]) -> None:
        """Hook for subclasses, called under the lock with the rows just written and the
        values `_push` was given for them."""

    def clear(self) -> None:
        """Forget every row: `len()` is 0, `sample` refuses as on a new buffer, and later pushes
        are the only rows sampled. The layout (keys, shapes, dtypes), the RNG and the
        controller's counters stay."""
        with self._lock:
            self._pos = 0
            self._size = 0
            self._on_clear()

    def _on_clear(self) -> None:
        """Hook for subclasses, called under the lock when every row is forgotten."""

    # -- reading --------------------------------------------------------------------------
    def _check_sample(self, batch_size: int) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
            raise ValueError(f"{type(self).__name__}.sample: batch_size must be a positive int, "
                             f"got {batch_size!r}")
        if self._size == 0:
            raise RuntimeError(f"{type(self).__name__}.sample: the buffer is empty; push transitions "
                               "before sampling (an UpdateSchedule with min_samples gates this)")

    def sample(self, batch_size: int) -> Dict[str, Any]:
        """`batch_size` rows drawn uniformly with replacement, plus `"index"` (int64)."""
        with self._lock:
            self._check_sample(batch_size)
            index = self._rng.integers(0, self._size, size=int(batch_size), dtype=np.int64)
            batch = self._storage.read(index)
            if self.controller is not None:
                self.controller.on_sample(1)
        batch["index"] = index
        return batch

    # -- state ----------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        """Rows held, write position, size, RNG state and the controller's counters (copies)."""
        with self._lock:
            return self._state()

    def _state(self, copy: bool = True) -> Dict[str, Any]:
        return {
            "kind": type(self).__name__,
            "version": 1,
            "capacity": self._capacity,
            "position": self._pos,
            "size": self._size,
            "pushes": self._pushes,
            "rng": self._rng.bit_generator.state,
            "controller": None if self.controller is None else self.controller.state_dict(),
            "data": self._storage.state(self._size, copy),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a `state_dict()`; the capacity and kind must match this buffer's."""
        name = type(self).__name__
        if state.get("kind") != name:
            raise ValueError(f"{name}.load_state_dict: the state was saved by a {state.get('kind')!r}, "
                             f"not a {name}; load it into a {state.get('kind')}")
        if int(state["capacity"]) != self._capacity:
            raise ValueError(f"{name}.load_state_dict: the state holds capacity {state['capacity']} but "
                             f"this buffer has capacity {self._capacity}; build the buffer with "
                             f"capacity={state['capacity']}")
        with self._lock:
            self._storage.load(state["data"], int(state["size"]))
            self._pos = int(state["position"])
            self._size = int(state["size"])
            self._pushes = int(state["pushes"])
            self._rng.bit_generator.state = state["rng"]
            if self.controller is not None and state.get("controller") is not None:
                self.controller.load_state_dict(state["controller"])
            self._load_extra(state)

    def _load_extra(self, state: Mapping[str, Any]) -> None:
        """Hook for subclasses, called under the lock."""

    def save(self, path: str) -> None:
        """Write the state to `path` (one .npz file, written atomically, no pickle). The file
        is written from the buffer's own arrays, not from copies (a frame buffer's frames can
        be gigabytes), so pushes wait for it."""
        with self._lock:
            save_state(self._state(copy=False), path)

    def load(self, path: str) -> None:
        """Restore a buffer written by `save(path)`, its arrays read from the file straight
        into the buffer's own."""
        self.load_state_dict(load_state(path, lazy=True))

    # -- misc -----------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"{type(self).__name__}(capacity={self._capacity}, len={self._size}, position={self._pos})"
