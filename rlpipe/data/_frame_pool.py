"""`FramePool`: single frames stored once, shared by reference-counted frame stacks.

A frame stack is a tuple of frame indices into the pool. Frames are reference counted:
every transition row that uses a frame, and every stack remembered in the recent-stack
table, holds one reference; a frame whose count drops to 0 is recycled. Free slots are
reused before new ones are touched, so the memory committed follows the frames alive (the
pool is `np.zeros`, whose pages the OS commits only when written).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, List, Optional, Tuple

import numpy as np

from ._serialize import fill


class FramePool:
    """Frames of one shape and dtype in a growable array, with reference counts."""

    def __init__(self, frame_shape: Tuple[int, ...], dtype: np.dtype, slots: int,
                 lookback: int) -> None:
        self.frame_shape = tuple(frame_shape)
        self.frames = np.zeros((int(slots),) + self.frame_shape, dtype=dtype)
        self.refs = np.zeros(int(slots), dtype=np.int64)
        self.lookback = int(lookback)
        self._free: List[int] = []
        self._top = 0  # slots [0, _top) have been handed out at least once
        self._recent: "OrderedDict[int, np.ndarray]" = OrderedDict()

    # -- slots ----------------------------------------------------------------------------
    @property
    def high_water(self) -> int:
        """How many slots were ever used (the pool's committed size, in frames)."""
        return self._top

    @property
    def live(self) -> int:
        """Frames held now (referenced by a row or a recent stack)."""
        return int(np.count_nonzero(self.refs[:self._top]))

    def _alloc(self, n: int) -> np.ndarray:
        take = min(n, len(self._free))
        out = [self._free.pop() for _ in range(take)]
        rest = n - take
        if self._top + rest > len(self.frames):
            self._grow(self._top + rest)
        out.extend(range(self._top, self._top + rest))
        self._top += rest
        return np.asarray(out, dtype=np.int64)

    def _grow(self, need: int) -> None:
        size = max(need, len(self.frames) + len(self.frames) // 2 + 1)
        frames = np.zeros((size,) + self.frame_shape, dtype=self.frames.dtype)
        frames[:self._top] = self.frames[:self._top]
        refs = np.zeros(size, dtype=np.int64)
        refs[:self._top] = self.refs[:self._top]
        self.frames, self.refs = frames, refs

    # A plain loop: the index arrays are a stack or a few rows (8 to 64 slots), where
    # np.add.at / np.unique cost more in call overhead than the loop does in all.
    def incref(self, index: np.ndarray) -> None:
        refs = self.refs
        for i in index.tolist():
            refs[i] += 1

    def decref(self, index: np.ndarray) -> None:
        refs, free = self.refs, self._free
        for i in index.tolist():
            refs[i] -= 1
            if refs[i] == 0:  # reached 0 once, however often the slot is listed
                free.append(i)

    # -- stacks ---------------------------------------------------------------------------
    def store_stack(self, stack: np.ndarray) -> np.ndarray:
        """Store the frames of `stack` ([k, *frame]); a frame equal to the one before it (the
        reset frame repeated at an episode start, or zero padding) is stored once."""
        same = np.array([False] + [np.array_equal(stack[j], stack[j - 1])
                                   for j in range(1, len(stack))])
        fresh = np.flatnonzero(~same)
        slots = self._alloc(len(fresh))
        self.frames[slots] = stack[fresh]
        return slots[np.cumsum(~same) - 1]

    def store_frame(self, frame: np.ndarray) -> int:
        slot = int(self._alloc(1)[0])
        self.frames[slot] = frame
        return slot

    def gather(self, index: np.ndarray) -> np.ndarray:
        return self.frames[index]

    @staticmethod
    def key(stack: np.ndarray) -> int:
        """The lookup key of `stack`: a hash of its newest frame. Stacks that differ only in
        older frames share a key; the newer one replaces the older in the table, which costs
        at worst a stack stored whole, never a wrong one (`find` compares every frame)."""
        return hash(stack[-1].tobytes())

    def find(self, stack: np.ndarray, key: Optional[int] = None) -> Optional[np.ndarray]:
        """The frame indices of a recently remembered stack equal to `stack`, or None
        (`key`: `self.key(stack)` when the caller has it already)."""
        index = self._recent.get(self.key(stack) if key is None else key)
        if index is None or not np.array_equal(self.frames[index], stack):
            return None
        return index

    def extend(self, stack: np.ndarray) -> Optional[np.ndarray]:
        """The frame indices of `stack` built on a recently remembered stack one step older in
        its stream (whose k-1 newest frames are `stack`'s k-1 oldest): those frames shared, the
        newest stored. None when no remembered stack fits. With n-step rows a row's next_obs
        is n steps past its obs, so it continues the previous row's next_obs instead."""
        if len(stack) < 2:
            return None
        older = self._recent.get(self.key(stack[:-1]))  # keyed by its newest frame, stack[-2]
        if older is None or not np.array_equal(self.frames[older[1:]], stack[:-1]):
            return None
        index = np.empty_like(older)
        index[:-1] = older[1:]
        index[-1] = self.store_frame(stack[-1])
        return index

    def remember(self, stack: np.ndarray, index: np.ndarray, key: Optional[int] = None) -> None:
        """Keep `stack` → `index` among the `lookback` most recent stacks (holding a reference
        on its frames), so that the next transition of its stream finds its obs here."""
        key = self.key(stack) if key is None else key
        old = self._recent.pop(key, None)
        if old is not None:
            self.decref(old)
        self.incref(index)
        self._recent[key] = index
        while len(self._recent) > self.lookback:
            self.decref(self._recent.popitem(last=False)[1])

    def reset(self) -> None:
        """Forget every frame and stack (the arrays stay allocated)."""
        self.refs[:] = 0
        self._free = []
        self._top = 0
        self._recent.clear()

    def load(self, frames: Any, refs: np.ndarray) -> None:
        """Hold exactly `frames` (an array, or a `StoredArray` read straight into the pool),
        with `refs` references each (from loaded rows); a frame that nothing references is
        a free slot."""
        n = len(frames)
        if n > len(self.frames):
            self._grow(n)
        self.reset()
        fill(self.frames[:n], frames)
        self.refs[:n] = refs
        self._top = n
        self._free = np.flatnonzero(self.refs[:n] == 0).tolist()
