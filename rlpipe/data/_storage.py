"""Preallocated ring storage: one array of shape [capacity, *row_shape] per (nested) key."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from ._serialize import fill
from ._tree import Path, as_rows, flatten, path_name, unflatten


class ArrayStorage:
    """Rows of a fixed layout in preallocated arrays, laid out by the first write.

    Not thread-safe on its own: the buffer that owns it holds the lock.
    """

    def __init__(self, capacity: int, owner: str = "ReplayBuffer") -> None:
        self.capacity = capacity
        self.owner = owner
        self.arrays: Optional[Dict[Path, np.ndarray]] = None

    # -- layout ---------------------------------------------------------------------------
    @property
    def paths(self) -> List[Path]:
        return [] if self.arrays is None else list(self.arrays)

    def prepare(self, batch: Mapping[str, Any]) -> Tuple[Dict[Path, np.ndarray], int]:
        """Validate a batch against the layout (or make the layout) and return its rows."""
        if not isinstance(batch, Mapping):
            raise TypeError(f"{self.owner}.push takes a dict of arrays with a leading batch dim, "
                            f"got {type(batch).__name__}")
        rows, n = as_rows(flatten(batch), f"{self.owner}.push")
        if self.arrays is None:
            return rows, n
        self._check_layout(rows)
        return rows, n

    def _check_layout(self, rows: Mapping[Path, np.ndarray]) -> None:
        held = self.arrays
        assert held is not None
        missing = [p for p in held if p not in rows]
        extra = [p for p in rows if p not in held]
        keys = ", ".join(path_name(p) for p in held)
        if missing:
            raise KeyError(
                f"{self.owner}.push: the batch lacks key {path_name(missing[0])!r}, which the storage "
                f"holds (storage keys, laid out by the first push: {keys}); push the same keys every time"
            )
        if extra:
            raise KeyError(
                f"{self.owner}.push: the batch has key {path_name(extra[0])!r}, which the storage does "
                f"not hold (storage keys, laid out by the first push: {keys}); push the same keys "
                "every time, or use a new buffer for the new layout"
            )
        for path, arr in rows.items():
            store = held[path]
            if arr.shape[1:] != store.shape[1:]:
                raise ValueError(
                    f"{self.owner}.push: key {path_name(path)!r} has row shape {arr.shape[1:]} (batch "
                    f"shape {arr.shape}) but the storage holds row shape {store.shape[1:]} (storage "
                    f"shape {store.shape}, laid out by the first push); reshape the value or use a "
                    "new buffer"
                )
            if not np.can_cast(arr.dtype, store.dtype, casting="same_kind"):
                raise TypeError(
                    f"{self.owner}.push: key {path_name(path)!r} has dtype {arr.dtype} but the storage "
                    f"holds {store.dtype} (laid out by the first push), and {arr.dtype} does not cast "
                    f"to it safely; convert with .astype({str(store.dtype)!r})"
                )

    def allocate(self, rows: Mapping[Path, np.ndarray]) -> None:
        """Lay the storage out from a first batch (np.zeros: pages are committed when written)."""
        self.arrays = {p: np.zeros((self.capacity,) + a.shape[1:], dtype=a.dtype)
                       for p, a in rows.items()}

    # -- rows -----------------------------------------------------------------------------
    def write(self, rows: Mapping[Path, np.ndarray], start: int) -> None:
        """Write `n <= capacity` rows at `start`, wrapping around the end (two slices at most)."""
        assert self.arrays is not None
        n = next(iter(rows.values())).shape[0]
        first = min(n, self.capacity - start)
        for path, arr in rows.items():
            store = self.arrays[path]
            store[start:start + first] = arr[:first]
            if first < n:
                store[:n - first] = arr[first:]

    def read(self, index: np.ndarray) -> Dict[str, Any]:
        """Gather rows (copies) as a nested dict."""
        assert self.arrays is not None
        return unflatten({p: a[index] for p, a in self.arrays.items()})

    # -- state ----------------------------------------------------------------------------
    def state(self, size: int, copy: bool = True) -> Dict[str, Any]:
        """The first `size` rows of every key, nested: copies, or with `copy=False` views of
        the storage's own arrays (for a writer that holds the buffer's lock meanwhile)."""
        if self.arrays is None:
            return {}
        return unflatten({p: a[:size].copy() if copy else a[:size] for p, a in self.arrays.items()})

    def load(self, data: Mapping[str, Any], size: int) -> None:
        flat = flatten(data)
        if not flat:
            self.arrays = None
            return
        for path, arr in flat.items():
            if arr.shape[0] != size:
                raise ValueError(f"{self.owner}.load: key {path_name(path)!r} has {arr.shape[0]} rows "
                                 f"but the saved size is {size}; the file is inconsistent")
        self.allocate(flat)
        for path, arr in flat.items():
            fill(self.arrays[path][:size], arr)  # type: ignore[index]
