"""`SumTree`: a binary tree over priorities with batched (vectorised) update and search."""
from __future__ import annotations

import numpy as np


class SumTree:
    """Sums over `capacity` non-negative leaves in one flat array (node i has children 2i and
    2i+1; the root is node 1; leaf k is node `leaves_start + k`), plus the smallest leaf set.

    Every operation takes a batch and costs a handful of numpy calls, not a Python loop per
    item: `find` walks down one level per call (5 calls a level); `update` adds the change of
    each leaf to all its ancestors in one `np.add.at`. Adding differences lets rounding drift
    accumulate in the inner sums, so the tree is rebuilt exactly from its leaves after every
    `capacity` leaf updates (amortised O(1) per update). The minimum is cached and recomputed
    from the leaves only when a leaf holding it changes.
    """

    def __init__(self, capacity: int) -> None:
        if isinstance(capacity, bool) or int(capacity) != capacity or capacity <= 0:
            raise ValueError(f"SumTree: capacity must be a positive int, got {capacity!r}")
        self.capacity = int(capacity)
        self.depth = max(1, (self.capacity - 1).bit_length())
        self.leaves_start = 1 << self.depth
        self._sum = np.zeros(2 * self.leaves_start, dtype=np.float64)
        self._leaf_min = np.full(self.capacity, np.inf)  # leaves never set count as +inf
        self._min = np.inf
        self._min_stale = False
        self._shifts = np.arange(1, self.depth + 1, dtype=np.int64)
        self._updates_since_rebuild = 0

    @property
    def total(self) -> float:
        """Sum of all leaves."""
        return float(self._sum[1])

    @property
    def min(self) -> float:
        """Smallest leaf that was ever set (inf when none)."""
        if self._min_stale:
            self._min = float(self._leaf_min.min())
            self._min_stale = False
        return self._min

    def get(self, index: np.ndarray) -> np.ndarray:
        """Leaf values at `index`."""
        return self._sum.take(np.asarray(index) + self.leaves_start)

    def update(self, index: np.ndarray, value: np.ndarray) -> None:
        """Set leaves `index` to `value` (>= 0; with duplicate indices the last one wins)."""
        index = np.asarray(index, dtype=np.int64).reshape(-1)
        value = np.broadcast_to(np.asarray(value, dtype=np.float64), index.shape)
        if index.size == 0:
            return
        if index.min() < 0 or index.max() >= self.capacity:
            raise IndexError(f"SumTree.update: index out of range [0, {self.capacity}): "
                             f"min {index.min()}, max {index.max()}")
        if index.size > 1:  # keep the last write per leaf
            _, last = np.unique(index[::-1], return_index=True)
            if last.size != index.size:
                keep = index.size - 1 - last
                index, value = index[keep], value[keep]
        old_min = self._leaf_min.take(index)
        if self._min_stale or np.any(old_min <= self._min):
            self._min_stale = True  # a leaf that held the minimum changed
        else:
            self._min = min(self._min, float(value.min()))
        self._leaf_min[index] = value
        node = index + self.leaves_start
        delta = value - self._sum.take(node)
        self._sum[node] = value
        ancestors = node[:, None] >> self._shifts
        np.add.at(self._sum, ancestors.ravel(), np.repeat(delta, self.depth))
        self._updates_since_rebuild += index.size
        if self._updates_since_rebuild >= self.capacity or not np.all(value > 0):
            self.rebuild()  # a zero leaf must leave exact zeros above it (find relies on it)

    def rebuild(self) -> None:
        """Recompute every inner sum from the leaves (exact; O(capacity))."""
        s = self._sum
        for level in range(self.depth - 1, -1, -1):
            lo, hi = 1 << level, 2 << level
            np.add(s[2 * lo:2 * hi:2], s[2 * lo + 1:2 * hi:2], out=s[lo:hi])
        self._updates_since_rebuild = 0

    def find(self, mass: np.ndarray) -> np.ndarray:
        """For each prefix mass in [0, total), the leaf whose cumulative range holds it.

        A leaf of value 0 (or an unused leaf) is never returned, even for a mass at the edge.
        """
        mass = np.array(mass, dtype=np.float64).reshape(-1)
        rest = mass.copy()
        node = np.ones(mass.shape, dtype=np.int64)
        s = self._sum
        for _ in range(self.depth):
            node <<= 1
            left = s.take(node)
            right = rest >= left
            np.subtract(rest, left, out=rest, where=right)
            node += right
        bad = s.take(node) <= 0  # rounding carried a mass past the last non-zero leaf
        if bad.any():
            node[bad] = self._find_nonzero(mass[bad])
        return node - self.leaves_start

    def _find_nonzero(self, mass: np.ndarray) -> np.ndarray:
        """The slow walk: never enter a subtree whose sum is 0."""
        node = np.ones(mass.shape, dtype=np.int64)
        s = self._sum
        for _ in range(self.depth):
            left = node << 1
            left_sum = s[left]
            right = (mass >= left_sum) & (s[left + 1] > 0)
            mass = np.where(right, mass - left_sum, mass)
            node = left + right
        return node
