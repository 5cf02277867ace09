"""`SequenceReplayBuffer`: replay of fixed-length sequences with burn-in and R2D2's prioritization."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Union

import numpy as np

from ._prioritized import PrioritizedReplayBuffer
from ._replay import ReplayBuffer
from ._schedule import UpdateSchedule
from ._serialize import load_state, save_state
from ._sequences import _int

_ADDED_BY_SAMPLE = ("index", "weight", "burn_in")


class SequenceReplayBuffer:
    """Sequences of `burn_in + seq_len` steps (as `SequenceAdder` emits them), one per row of
    a `ReplayBuffer` (or a `PrioritizedReplayBuffer` with `prioritized=True`): preallocated,
    a full buffer overwrites its oldest sequences.

    `push(sequences)` takes a dict with a leading sequence axis: per-step fields [k, L, ...],
    `state` [k, ...] (the recurrent state at each sequence's start), `mask` [k, L] and,
    optionally, `new_steps` [k]. `sample(batch_size)` returns [B, L, ...] arrays, `state`
    [B, ...], `mask` [B, L], `burn_in` (int: the first `burn_in` steps only warm the state up),
    `index`, and `weight` (importance weights) when prioritized.

    Prioritized (R2D2's values: priority exponent `alpha` 0.9, importance exponent `beta` 0.6,
    mix `eta` 0.9): `update_priority(index, td_errors, mask)` sets each sequence's priority to
    eta * max_t |td_t| + (1 - eta) * mean_t |td_t| over its valid steps after burn-in.

    `controller` (an `UpdateSchedule`) counts env steps, not sequences: each push adds the sum
    of the sequences' `new_steps` (the steps no earlier sequence of their env held; the number
    of valid steps, `mask.sum()`, for sequences pushed without it), and each `sample` one
    batch. So `min_samples` and `max_updates_per_step` are in env steps, as for
    `ReplayBuffer`; the schedule's `batch_size` rule compares with `len()`, in sequences.
    """

    def __init__(self, capacity: int, seq_len: int, burn_in: int, prioritized: bool = False,
                 alpha: float = 0.9, beta: float = 0.6, eta: float = 0.9, eps: float = 1e-6,
                 seed: Optional[int] = None, controller: Optional[UpdateSchedule] = None) -> None:
        self.seq_len = _int(seq_len, "seq_len", 1, "SequenceReplayBuffer")
        self.burn_in = _int(burn_in, "burn_in", 0, "SequenceReplayBuffer")
        self.length = self.seq_len + self.burn_in
        if not 0.0 <= eta <= 1.0:
            raise ValueError(f"SequenceReplayBuffer: eta (the weight of the max in the priority mix) "
                             f"must be in [0, 1], got {eta!r} (R2D2: 0.9)")
        self.eta = float(eta)
        self.prioritized = bool(prioritized)
        self._buffer: Union[ReplayBuffer, PrioritizedReplayBuffer] = (
            PrioritizedReplayBuffer(capacity, alpha=alpha, beta=beta, eps=eps, seed=seed)
            if self.prioritized else ReplayBuffer(capacity, seed=seed))
        self.controller = controller

    # -- properties -----------------------------------------------------------------------
    @property
    def capacity(self) -> int:
        """Most sequences held."""
        return self._buffer.capacity

    def __len__(self) -> int:
        """Sequences held."""
        return len(self._buffer)

    @property
    def beta(self) -> float:
        """The importance-sampling exponent (may be annealed between samples)."""
        return self._prioritized("beta").beta

    @beta.setter
    def beta(self, value: float) -> None:
        self._prioritized("beta").beta = float(value)

    def priorities(self) -> np.ndarray:
        """(priority + eps) ** alpha of the sequences held (a copy)."""
        return self._prioritized("priorities").priorities()

    def _prioritized(self, what: str) -> PrioritizedReplayBuffer:
        if not isinstance(self._buffer, PrioritizedReplayBuffer):
            raise RuntimeError(f"SequenceReplayBuffer.{what}: this buffer samples uniformly; build it "
                               "with prioritized=True to use priorities")
        return self._buffer

    # -- writing --------------------------------------------------------------------------
    def push(self, sequences: Mapping[str, Any]) -> None:
        """Store k sequences (a dict with a leading sequence axis, e.g. `SequenceAdder.add`'s)."""
        owner = "SequenceReplayBuffer.push"
        if not isinstance(sequences, Mapping):
            raise TypeError(f"{owner} takes a dict of sequences, got {type(sequences).__name__}")
        for key in ("state", "mask"):
            if key not in sequences:
                raise KeyError(f"{owner}: the sequences lack {key!r} (they have {sorted(sequences)}); "
                               "push what SequenceAdder emits, or push step rows with "
                               "data_pusher(cfg, buffer_, group_by_env=True) into a StepSequenceBuffer")
        for key in _ADDED_BY_SAMPLE:
            if key in sequences:
                raise KeyError(f"{owner}: key {key!r} is reserved (sample adds it); drop it first")
        mask = np.asarray(sequences["mask"])
        if mask.ndim != 2 or mask.shape[1] != self.length:
            raise ValueError(f"{owner}: mask has shape {mask.shape}, expected [k, {self.length}] "
                             f"(burn_in {self.burn_in} + seq_len {self.seq_len}); build the adder "
                             "with the buffer's seq_len and burn_in")
        for key, value in sequences.items():
            if key in ("state", "new_steps"):
                continue
            for leaf in _leaves(value):
                if np.ndim(leaf) < 2 or np.shape(leaf)[:2] != mask.shape:
                    raise ValueError(f"{owner}: {key!r} has shape {np.shape(leaf)}; per-step fields "
                                     f"need shape [k, {self.length}, ...] like mask {mask.shape}")
        rows = {k: v for k, v in sequences.items() if k != "new_steps"}
        steps = (np.asarray(sequences["new_steps"]).sum() if "new_steps" in sequences
                 else mask.astype(bool).sum())
        self._buffer.push(rows)
        if self.controller is not None:
            self.controller.on_insert(int(steps))

    def clear(self) -> None:
        """Forget every sequence (layout, RNG and the controller's counters stay)."""
        self._buffer.clear()

    # -- reading --------------------------------------------------------------------------
    def sample(self, batch_size: int) -> Dict[str, Any]:
        """`batch_size` sequences (uniform, or in proportion to priority), plus `burn_in`,
        `index` and, when prioritized, `weight`."""
        batch = self._buffer.sample(batch_size)
        if self.controller is not None:
            self.controller.on_sample(1)
        batch["burn_in"] = self.burn_in
        return batch

    def sequence_priority(self, td_errors: Any, mask: Any) -> np.ndarray:
        """R2D2's mix per sequence: eta * max + (1 - eta) * mean of |td| over the steps where
        `mask` is True after burn-in; 0 for a sequence with no such step.

        `td_errors` and `mask` are [B, L] (whole sequences) or [B, seq_len] (the learning part)."""
        td = np.abs(np.asarray(td_errors, dtype=np.float64))
        ok = np.asarray(mask, dtype=bool)
        if td.shape != ok.shape or td.ndim != 2 or td.shape[1] not in (self.length, self.seq_len):
            raise ValueError(f"SequenceReplayBuffer: td_errors {td.shape} and mask {ok.shape} must both "
                             f"be [B, {self.length}] (whole sequences) or [B, {self.seq_len}] (after "
                             f"burn-in)")
        if td.shape[1] == self.length:
            td, ok = td[:, self.burn_in:], ok[:, self.burn_in:]
        if not np.all(np.isfinite(td[ok])):
            raise ValueError("SequenceReplayBuffer.update_priority: td_errors hold NaN or inf on valid "
                             "steps; the learner diverged or the mask is wrong")
        n = ok.sum(axis=1)
        peak = np.where(ok, td, 0.0).max(axis=1)
        mean = np.where(ok, td, 0.0).sum(axis=1) / np.maximum(n, 1)
        return np.where(n > 0, self.eta * peak + (1.0 - self.eta) * mean, 0.0)

    def update_priority(self, index: Any, td_errors: Any, mask: Any = None) -> None:
        """Set the sampled sequences' priorities from their TD errors ([B, L] or [B, seq_len],
        see `sequence_priority`). `mask` (same shape) says which steps have a TD error; None
        takes the stored masks of the rows. A 1-D `td_errors` [B] is taken as the priorities."""
        buffer = self._prioritized("update_priority")
        td = np.asarray(td_errors)
        if td.ndim == 1:
            buffer.update_priority(index, td)
            return
        if mask is None:
            rows = np.asarray(index, dtype=np.int64).reshape(-1)
            with buffer._lock:
                held = buffer._storage.arrays
                mask = None if held is None else held[("mask",)][rows]
            if mask is None:
                raise RuntimeError("SequenceReplayBuffer.update_priority: the buffer is empty")
            if td.ndim == 2 and td.shape[1] == self.seq_len:
                mask = mask[:, self.burn_in:]
        buffer.update_priority(index, self.sequence_priority(td, mask))

    # -- state ----------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        """The settings, the inner buffer's state and the controller's counters (copies)."""
        with self._buffer._lock:
            return self._state()

    def _state(self, copy: bool = True) -> Dict[str, Any]:
        return {"kind": "SequenceReplayBuffer", "version": 1, "seq_len": self.seq_len,
                "burn_in": self.burn_in, "prioritized": self.prioritized, "eta": self.eta,
                "controller": None if self.controller is None else self.controller.state_dict(),
                "buffer": self._buffer._state(copy)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a `state_dict()` of a buffer with the same capacity, lengths and kind."""
        if state.get("kind") != "SequenceReplayBuffer":
            raise ValueError(f"SequenceReplayBuffer.load_state_dict: the state was saved by a "
                             f"{state.get('kind')!r}; load it into a {state.get('kind')}")
        for name in ("seq_len", "burn_in", "prioritized"):
            if state[name] != getattr(self, name):
                raise ValueError(f"SequenceReplayBuffer.load_state_dict: the state has {name}="
                                 f"{state[name]} but this buffer has {name}={getattr(self, name)}; "
                                 f"build the buffer with {name}={state[name]}")
        self._buffer.load_state_dict(state["buffer"])
        self.eta = float(state["eta"])
        if self.controller is not None and state.get("controller") is not None:
            self.controller.load_state_dict(state["controller"])

    def save(self, path: str) -> None:
        """Write the state to `path` (one .npz file, written atomically, no pickle), from the
        buffer's own arrays rather than copies of them, so pushes wait for it."""
        with self._buffer._lock:
            save_state(self._state(copy=False), path)

    def load(self, path: str) -> None:
        """Restore a buffer written by `save(path)`, its arrays read from the file straight
        into the buffer's own."""
        self.load_state_dict(load_state(path, lazy=True))

    def __repr__(self) -> str:
        return (f"SequenceReplayBuffer(capacity={self.capacity}, len={len(self)}, seq_len="
                f"{self.seq_len}, burn_in={self.burn_in}, prioritized={self.prioritized})")


def _leaves(value: Any) -> list:
    if isinstance(value, Mapping):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    return [value]
