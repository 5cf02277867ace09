"""Replay buffers that store each frame of stacked-frame observations once.

`FrameReplayBuffer` and `PrioritizedFrameReplayBuffer` take and give the same batches as
`ReplayBuffer` and `PrioritizedReplayBuffer`, for transitions whose `obs` and `next_obs` are
uint8 frame stacks ([B, k, H, W], or channels last [B, H, W, k]). Each row keeps 2k frame
indices instead of two stacks; the stacks are gathered back at sample time, as DQN Zoo's and
SB3's memory-optimised buffers do. Streams are found by content, not by env id: a row's `obs`
is looked up among the recently pushed `next_obs` stacks (the previous step of its env, or
n steps back with n-step rows), and `next_obs` shares its k-1 older frames with `obs` (or, n
steps on, with the previous row's `next_obs`), so about one new frame is stored per row. So
several envs interleaved, episode starts (the reset frame repeated, as gymnasium's
`FrameStackObservation` pads) and the ring's wrap-around need no bookkeeping from the
caller, and a stack that matches nothing is stored whole (correct, only less compact).
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

import numpy as np

from ._frame_pool import FramePool
from ._prioritized import PrioritizedReplayBuffer
from ._replay import ReplayBuffer
from ._schedule import UpdateSchedule
from ._serialize import fill
from ._storage import ArrayStorage
from ._tree import flatten, path_name

FRAME_KEYS = (("obs",), ("next_obs",))


class FrameStorage(ArrayStorage):
    """`ArrayStorage` whose `obs` and `next_obs` live in a `FramePool` as frame indices."""

    def __init__(self, capacity: int, owner: str, frame_stack: int, lookback: int) -> None:
        super().__init__(capacity, owner)
        if isinstance(frame_stack, bool) or not isinstance(frame_stack, (int, np.integer)) \
                or frame_stack < 1:
            raise ValueError(f"{owner}: frame_stack must be a positive int (frames per "
                             f"observation), got {frame_stack!r}")
        if isinstance(lookback, bool) or not isinstance(lookback, (int, np.integer)) or lookback < 1:
            raise ValueError(f"{owner}: lookback must be a positive int (recent stacks remembered "
                             f"to find a row's obs), got {lookback!r}")
        self.k = int(frame_stack)
        self.lookback = int(lookback)
        self.axis: Optional[int] = None  # the frame axis of an obs row: 0 or -1
        self.row_shape: Optional[tuple] = None
        self.pool: Optional[FramePool] = None
        self.row_frames = np.full((capacity, 2 * self.k), -1, dtype=np.int32)

    # -- layout ---------------------------------------------------------------------------
    def prepare(self, batch: Mapping[str, Any]):
        rows, n = super().prepare({k: v for k, v in batch.items() if k not in ("obs", "next_obs")}
                                  if isinstance(batch, Mapping) else batch)
        for (key,) in FRAME_KEYS:
            value = np.asarray(batch.get(key)) if not isinstance(batch.get(key), Mapping) else None
            self._check_frames(key, value, n)
            rows[(key,)] = value
        return rows, n

    def _check_frames(self, key: str, value: Optional[np.ndarray], n: int) -> None:
        k = self.k
        shape = None if value is None else value.shape
        ok = (value is not None and value.dtype == np.uint8 and value.ndim >= 4
              and shape[0] == n and k in (shape[1], shape[-1]))
        if ok and self.row_shape is not None:
            ok = shape[1:] == self.row_shape
        if not ok:
            want = "the first push's " + str(self.row_shape) if self.row_shape else \
                f"[{k}, H, W] or [H, W, {k}]"
            got = "missing/nested" if value is None else f"{value.dtype} {shape}"
            raise ValueError(f"{self.owner}.push: {key!r} must be uint8 frame stacks with rows "
                             f"{want} (frame_stack={k}) and {n} rows, got {got}; use ReplayBuffer "
                             "for other observations")

    def allocate(self, rows: Mapping[Any, np.ndarray]) -> None:
        super().allocate({p: a for p, a in rows.items() if p not in FRAME_KEYS})
        obs = rows[("obs",)]
        self.row_shape = obs.shape[1:]
        self.axis = 0 if obs.shape[1] == self.k else -1
        frame_shape = obs.shape[2:] if self.axis == 0 else obs.shape[1:-1]
        slots = self.capacity + self.capacity // 16 + self.k * (self.lookback + 2)
        self.pool = FramePool(frame_shape, obs.dtype, slots, self.lookback)

    def _frames_first(self, stacks: np.ndarray) -> np.ndarray:
        return stacks if self.axis == 0 else np.moveaxis(stacks, -1, 1)

    # -- rows -----------------------------------------------------------------------------
    def write(self, rows: Mapping[Any, np.ndarray], start: int) -> None:
        rest = {p: a for p, a in rows.items() if p not in FRAME_KEYS}
        obs = self._frames_first(rows[("obs",)])
        nxt = self._frames_first(rows[("next_obs",)])
        n = len(obs)
        where = (start + np.arange(n)) % self.capacity
        old = self.row_frames[where]
        old = old[old[:, 0] >= 0]
        pool = self.pool
        if old.size:
            pool.decref(old.ravel())
        for i, row in enumerate(where):
            next_key = pool.key(nxt[i])  # looked up, then remembered: hash it once
            index = self._index_row(pool, obs[i], nxt[i], next_key)
            pool.incref(index)
            self.row_frames[row] = index
            pool.remember(nxt[i], index[self.k:], next_key)
        if rest:
            super().write(rest, start)

    def _index_row(self, pool: FramePool, obs: np.ndarray, nxt: np.ndarray,
                   next_key: int) -> np.ndarray:
        first = pool.find(obs)
        if first is None:
            first = pool.extend(obs)
        if first is None:  # an episode start (or a stream not seen lately): store it whole
            first = pool.store_stack(obs)
        second = pool.find(nxt, next_key)
        if second is None:
            if np.array_equal(nxt[:-1], obs[1:]):  # one step after obs
                second = first.copy()
                second[:-1] = first[1:]
                second[-1] = pool.store_frame(nxt[-1])
            else:  # n steps after obs: one step after the previous row's next_obs
                second = pool.extend(nxt)
                if second is None:
                    second = pool.store_stack(nxt)
        return np.concatenate([first, second])

    def read(self, index: np.ndarray) -> Dict[str, Any]:
        batch = super().read(index)
        frames = self.row_frames[index]
        for (key,), cols in zip(FRAME_KEYS, (slice(0, self.k), slice(self.k, None))):
            stacks = self.pool.gather(frames[:, cols])
            batch[key] = stacks if self.axis == 0 else np.ascontiguousarray(np.moveaxis(stacks, 1, -1))
        return batch

    def reset(self) -> None:
        """Forget every row's frames (`clear()`); the layout stays."""
        self.row_frames[:] = -1
        if self.pool is not None:
            self.pool.reset()

    def nbytes(self, size: int) -> int:
        """Bytes committed for `size` rows: frames ever used, frame indices, other keys."""
        other = sum(a[0].nbytes for a in (self.arrays or {}).values()) * size
        frames = 0 if self.pool is None else self.pool.high_water * self.pool.frames[0].nbytes
        return frames + self.row_frames[0].nbytes * size + other

    # -- state ----------------------------------------------------------------------------
    def state(self, size: int, copy: bool = True) -> Dict[str, Any]:
        """The rows' other keys, frames and the rows' indices into them: copies of the frames
        the rows use (each once), or with `copy=False` the pool's frames as they lie (views;
        slots no row uses come back free on load)."""
        if self.arrays is None:
            return {}
        if not copy:
            return {"rows": super().state(size, copy=False),
                    "frames": self.pool.frames[:self.pool.high_water],
                    "frame_index": self.row_frames[:size], "row_shape": list(self.row_shape)}
        used, inverse = np.unique(self.row_frames[:size], return_inverse=True)
        return {"rows": super().state(size), "frames": self.pool.gather(used),
                "frame_index": inverse.reshape(size, 2 * self.k).astype(np.int32),
                "row_shape": list(self.row_shape)}

    def load(self, data: Mapping[str, Any], size: int) -> None:
        if not data:
            self.arrays = None
            return
        if "frame_index" not in data:
            raise ValueError(f"{self.owner}.load: the state holds no frame indices; it was not "
                             f"saved by a frame buffer (load it into a ReplayBuffer)")
        index = np.asarray(data["frame_index"], dtype=np.int64)
        frames = data["frames"]  # may be a StoredArray: the pool reads it in place
        if index.shape != (size, 2 * self.k):
            raise ValueError(f"{self.owner}.load: frame_index has shape {index.shape}, expected "
                             f"({size}, {2 * self.k}) for frame_stack={self.k}; build the buffer "
                             "with the frame_stack it was saved with")
        if index.size and (index.min() < 0 or index.max() >= len(frames)):
            raise ValueError(f"{self.owner}.load: frame_index points outside the {len(frames)} "
                             f"saved frames ({index.min()}..{index.max()}); the file is "
                             "inconsistent")
        rows = flatten(data.get("rows") or {})
        for path, arr in rows.items():
            if arr.shape[0] != size:
                raise ValueError(f"{self.owner}.load: key {path_name(path)!r} has {arr.shape[0]} rows "
                                 f"but the saved size is {size}; the file is inconsistent")
        empty = np.zeros((0,) + tuple(int(s) for s in data["row_shape"]), dtype=frames.dtype)
        self.allocate({**rows, ("obs",): empty, ("next_obs",): empty})
        for path, arr in rows.items():
            fill(self.arrays[path][:size], arr)
        self.reset()
        self.pool.load(frames, np.bincount(index.ravel(), minlength=len(frames)))
        self.row_frames[:size] = index


def _install(buffer: ReplayBuffer, frame_stack: int, lookback: int) -> None:
    buffer._storage = FrameStorage(buffer.capacity, type(buffer).__name__, frame_stack, lookback)


class FrameReplayBuffer(ReplayBuffer):
    """`ReplayBuffer` for uint8 frame-stack observations, each frame stored once.

    `frame_stack` is k, the frames per observation (the axis of size k, first or last, is
    the frame axis); `lookback` is how many recent `next_obs` stacks are remembered to find
    the next row's `obs` (at least n_envs, times n for n-step rows). `nbytes()` is the memory
    the rows use. Batches, sampling, `clear()`, `save`/`load` are those of `ReplayBuffer`; a
    saved file holds each used frame once.
    """

    def __init__(self, capacity: int, frame_stack: int = 4, seed: Optional[int] = None,
                 controller: Optional[UpdateSchedule] = None, lookback: int = 256) -> None:
        super().__init__(capacity, seed=seed, controller=controller)
        _install(self, frame_stack, lookback)

    def _on_clear(self) -> None:
        super()._on_clear()
        self._storage.reset()

    def nbytes(self) -> int:
        with self._lock:
            return self._storage.nbytes(self._size)


class PrioritizedFrameReplayBuffer(PrioritizedReplayBuffer):
    """`PrioritizedReplayBuffer` over the frame storage of `FrameReplayBuffer`."""

    def __init__(self, capacity: int, frame_stack: int = 4, alpha: float = 0.6, beta: float = 0.4,
                 eps: float = 1e-6, seed: Optional[int] = None,
                 controller: Optional[UpdateSchedule] = None, lookback: int = 256) -> None:
        super().__init__(capacity, alpha=alpha, beta=beta, eps=eps, seed=seed, controller=controller)
        _install(self, frame_stack, lookback)

    def _on_clear(self) -> None:
        super()._on_clear()
        self._storage.reset()

    def nbytes(self) -> int:
        with self._lock:
            return self._storage.nbytes(self._size)
