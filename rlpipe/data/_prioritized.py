"""`PrioritizedReplayBuffer`: proportional prioritized replay (Schaul et al., 2016) on a sum tree."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

import numpy as np

from ._schedule import UpdateSchedule
from ._replay import ReplayBuffer
from ._sumtree import SumTree

INITIAL_MAX_PRIORITY = 1.0
"""The priority a new row gets before any `update_priority` (and again after `clear()`)."""


class PrioritizedReplayBuffer(ReplayBuffer):
    """Rows are drawn with probability P(i) = p_i / sum_k p_k, where p_i = (priority_i + eps) ** alpha.

    `sample` adds `"weight"`: importance weights (N * P(i)) ** -beta divided by their maximum over
    all rows held (that is, by the weight of the least likely row), as float32 in (0, 1].
    New rows get the largest priority seen so far (`INITIAL_MAX_PRIORITY`, 1.0, at first and
    after `clear()`), so each is likely to be
    replayed at least once. `update_priority(index, priority)` sets priorities after a
    learning step (usually |TD error|); rows overwritten since they were sampled keep
    their fresh priority (the update for the old transition is dropped).

    `beta` may be changed between samples (annealing towards 1); `alpha` is fixed.
    """

    def __init__(self, capacity: int, alpha: float = 0.6, beta: float = 0.4, eps: float = 1e-6,
                 seed: Optional[int] = None, controller: Optional[UpdateSchedule] = None) -> None:
        super().__init__(capacity, seed=seed, controller=controller)
        if not alpha >= 0:
            raise ValueError(f"PrioritizedReplayBuffer: alpha must be >= 0 (0 is uniform), got {alpha!r}")
        if not beta >= 0:
            raise ValueError(f"PrioritizedReplayBuffer: beta must be >= 0, got {beta!r}")
        if not eps > 0:
            raise ValueError(f"PrioritizedReplayBuffer: eps must be > 0 so that every row keeps a "
                             f"non-zero probability and weights stay finite, got {eps!r}")
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.eps = float(eps)
        self.max_priority = INITIAL_MAX_PRIORITY
        self._tree = SumTree(self._capacity)
        self._write_stamp = np.zeros(self._capacity, dtype=np.int64)
        self._sample_stamp = np.full(self._capacity, -1, dtype=np.int64)

    def _on_clear(self) -> None:
        # A cleared buffer is a new one: no leaf keeps mass (or the tree would draw rows that
        # no longer exist), and new rows start again from the initial max priority.
        self.max_priority = INITIAL_MAX_PRIORITY
        self._tree = SumTree(self._capacity)
        self._write_stamp[:] = 0
        self._sample_stamp[:] = -1

    def push(self, batch: Mapping[str, Any], priority: Any = None) -> None:
        """Append B transitions. `priority` (B values >= 0, optional) gives each row its
        priority, e.g. |TD error| computed where the rows were collected (APE-X: the collectors
        compute them, so a new row is replayed as often as it deserves from the start);
        without it, rows get the largest priority seen so far."""
        if priority is None:
            self._push(batch, None)
            return
        priority = np.asarray(priority, dtype=np.float64).reshape(-1)
        self._check_priorities(priority, "push")
        self._push(batch, priority + self.eps)

    def _on_write(self, rows: np.ndarray, per_row: Optional[np.ndarray]) -> None:
        if per_row is None:
            self._tree.update(rows, self.max_priority ** self.alpha)
        else:
            self._tree.update(rows, per_row ** self.alpha)
            self.max_priority = max(self.max_priority, float(per_row.max()))
        self._write_stamp[rows] = self._pushes

    @staticmethod
    def _check_priorities(priority: np.ndarray, method: str) -> None:
        if not np.all(np.isfinite(priority)) or np.any(priority < 0):
            bad = priority[~(np.isfinite(priority) & (priority >= 0))][:3]
            raise ValueError(f"PrioritizedReplayBuffer.{method}: priorities must be finite and "
                             f">= 0 (e.g. abs(td_error)), got {bad.tolist()}")

    def sample(self, batch_size: int) -> Dict[str, Any]:
        """Rows drawn in proportion to priority (stratified: one draw per equal slice of the
        total mass), plus `"index"` (int64) and `"weight"` (float32)."""
        with self._lock:
            self._check_sample(batch_size)
            n = int(batch_size)
            total = self._tree.total
            mass = (np.arange(n) + self._rng.random(n)) * (total / n)
            mass = np.minimum(mass, np.nextafter(total, 0.0))
            index = self._tree.find(mass)
            p = self._tree.get(index)
            weight = (p / self._tree.min) ** (-self.beta)
            self._sample_stamp[index] = self._pushes
            batch = self._storage.read(index)
            if self.controller is not None:
                self.controller.on_sample(1)
        batch["index"] = index
        batch["weight"] = weight.astype(np.float32)
        return batch

    def update_priority(self, index: Any, priority: Any) -> None:
        """Set the priorities of rows `index` (from a sampled batch) to `priority` (>= 0)."""
        index = np.asarray(index, dtype=np.int64).reshape(-1)
        priority = np.asarray(priority, dtype=np.float64).reshape(-1)
        if index.shape != priority.shape:
            raise ValueError(f"PrioritizedReplayBuffer.update_priority: {index.size} indices but "
                             f"{priority.size} priorities; pass one priority per sampled row")
        self._check_priorities(priority, "update_priority")
        with self._lock:
            if index.size and (index.min() < 0 or index.max() >= self._size):
                raise IndexError(f"PrioritizedReplayBuffer.update_priority: index out of range "
                                 f"[0, {self._size}) (the rows held): min {index.min()}, max {index.max()}")
            stale = (self._sample_stamp[index] >= 0) & (self._write_stamp[index] > self._sample_stamp[index])
            index, priority = index[~stale], priority[~stale] + self.eps
            if index.size:
                self._tree.update(index, priority ** self.alpha)
                self.max_priority = max(self.max_priority, float(priority.max()))

    def priorities(self) -> np.ndarray:
        """The current p_i = (priority_i + eps) ** alpha of the rows held (a copy)."""
        with self._lock:
            return self._tree.get(np.arange(self._size)).copy()

    def _state(self, copy: bool = True) -> Dict[str, Any]:
        state = super()._state(copy)
        state.update(alpha=self.alpha, beta=self.beta, eps=self.eps, max_priority=self.max_priority,
                     tree_leaves=self._tree.get(np.arange(self._size)).copy(),
                     write_stamp=self._write_stamp[:self._size].copy(),
                     sample_stamp=self._sample_stamp[:self._size].copy())
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a `state_dict()`; capacity, kind and alpha must match this buffer's."""
        if state.get("kind") == type(self).__name__ and float(state["alpha"]) != self.alpha:
            raise ValueError(f"PrioritizedReplayBuffer.load_state_dict: the state was saved with "
                             f"alpha={state['alpha']} but this buffer has alpha={self.alpha}; the stored "
                             "priorities are raised to alpha, build the buffer with the saved alpha")
        super().load_state_dict(state)

    def _load_extra(self, state: Mapping[str, Any]) -> None:
        size = int(state["size"])
        self.beta = float(state["beta"])
        self.max_priority = float(state["max_priority"])
        self._tree = SumTree(self._capacity)
        self._tree.update(np.arange(size), np.asarray(state["tree_leaves"]))
        self._write_stamp[:] = 0
        self._sample_stamp[:] = -1
        self._write_stamp[:size] = state["write_stamp"]
        self._sample_stamp[:size] = state["sample_stamp"]

    def __repr__(self) -> str:
        return (f"PrioritizedReplayBuffer(capacity={self._capacity}, len={self._size}, "
                f"alpha={self.alpha}, beta={self.beta})")
