"""`SumTree`: a binary tree over priorities with batched (vectorised) update and search."""
from __future__ import annotations

import numpy as np


class SumTree:
    """Sums and minima over `capacity` non-negative leaves, in flat arrays (node i has
    children 2i and 2i+1; the root is node 1; leaves start at `self.leaves_start`).

    Every operation takes a batch and walks the tree one level at a time with numpy, so a
    batch of B costs O(log capacity) vector operations of size B rather than B Python loops.
    """

    def __init__(self, capacity: int) -> None:
        if capacity <= 0:
            raise ValueError(f"SumTree: capacity must be a positive int, got {capacity!r}")
        self.capacity = int(capacity)
        self.depth = max(1, (self.capacity - 1).bit_length())
        self.leaves_start = 1 << self.depth
        self._sum = np.zeros(2 * self.leaves_start, dtype=np.float64)
        self._min = np.full(2 * self.leaves_start, np.inf, dtype=np.float64)

    @property
    def total(self) -> float:
        """Sum of all leaves."""
        return float(self._sum[1])

    @property
    def min(self) -> float:
        """Smallest leaf that was ever set (inf when none)."""
        return float(self._min[1])

    def get(self, index: np.ndarray) -> np.ndarray:
        """Leaf values at `index`."""
        return self._sum[np.asarray(index) + self.leaves_start]

    def update(self, index: np.ndarray, value: np.ndarray) -> None:
        """Set leaves `index` to `value` (duplicate indices: the last one wins) and refresh
        their ancestors level by level."""
        index = np.asarray(index, dtype=np.int64).reshape(-1)
        value = np.broadcast_to(np.asarray(value, dtype=np.float64), index.shape)
        if index.size == 0:
            return
        if index.min() < 0 or index.max() >= self.capacity:
            raise IndexError(f"SumTree.update: index out of range [0, {self.capacity}): "
                             f"min {index.min()}, max {index.max()}")
        if index.size > 1 and np.unique(index).size != index.size:  # keep the last write per leaf
            _, last = np.unique(index[::-1], return_index=True)
            keep = index.size - 1 - last
            index, value = index[keep], value[keep]
        node = index + self.leaves_start
        self._sum[node] = value
        self._min[node] = value
        for _ in range(self.depth):
            # Duplicate parents all compute the same value from final children: no race.
            node = node >> 1
            left = node << 1
            self._sum[node] = self._sum[left] + self._sum[left + 1]
            self._min[node] = np.minimum(self._min[left], self._min[left + 1])

    def find(self, mass: np.ndarray) -> np.ndarray:
        """For each prefix mass in [0, total), the leaf whose cumulative range holds it.

        A subtree whose sum is 0 is never entered, so a leaf of priority 0 (or an unused
        leaf) is never returned, even when float rounding pushes a mass to the edge.
        """
        mass = np.array(mass, dtype=np.float64).reshape(-1)
        node = np.ones(mass.shape, dtype=np.int64)
        for _ in range(self.depth):
            left = node << 1
            left_sum = self._sum[left]
            go_right = (mass >= left_sum) & (self._sum[left + 1] > 0)
            mass = np.where(go_right, mass - left_sum, mass)
            node = left + go_right
        return node - self.leaves_start
