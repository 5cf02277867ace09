"""`SequenceAdder`: a recurrent policy's step records, per env, cut into fixed-length sequences
with burn-in, start states and masks (R2D2, Kapturowski et al., 2019)."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

import numpy as np

from ._tree import Path, as_rows, flatten, path_name, unflatten

_NOT_STORED = ("valid",)  # dropped rows never enter a window; the mask replaces the flag
SEQUENCE_KEYS = ("state", "mask", "new_steps")
"""Keys an emitted sequence has beside the stacked per-step fields."""


def _int(value: Any, name: str, minimum: int, owner: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{owner}: {name} must be an int >= {minimum}, got {value!r}")
    return int(value)


class SequenceAdder:
    """Turns a stream of vector steps into sequences of `burn_in + seq_len` steps, per env.

    `add(record)` takes one vector step as the acting path records it: a dict of arrays with
    leading dim n_envs holding at least `first` (bool: the row's obs starts an episode),
    `state` (a nested dict: the recurrent state that was input to this step, zeros where
    first is True), terminated and truncated, plus obs, action, reward, next_obs ... Rows with
    `valid=False` are not transitions: they are skipped, and they close their env's window (the
    env was restarted; its episode was dropped). It returns the sequences this step completed
    (a nested dict with a leading sequence axis) or None. Each sequence has:

    - every per-step field but `valid` and `state`, stacked on a time axis: [L, ...];
    - `state`: the recorded state at the sequence's first step (only that row);
    - `mask` [L] bool: True on real steps, False on the padding after an episode's end
      (padding is zeros: `first`, terminated and truncated are False there);
    - `new_steps` (int): how many of its steps no earlier sequence of that env held — summed
      over sequences it is the number of env steps stored, which the replay buffer's
      `UpdateSchedule` counts.

    Each env has one open window. When it holds L steps it is emitted and keeps its last
    `L - stride` steps (so consecutive sequences overlap by `L - stride`). An episode's end
    (terminated or truncated), an invalid row, or a `first` row arriving on an open window
    closes the window: it is emitted, padded, when it holds a step no sequence held yet, and
    the next episode opens a fresh one. A sequence never crosses an episode boundary.

    With `stride <= seq_len` every step past an episode's first `burn_in` steps falls in the
    learning part (after burn-in) of some sequence. An episode of at most `burn_in` steps
    (or a tail that would only be burn-in) has nothing to learn from: its window is not
    emitted, and its steps are counted in `dropped_steps`.
    """

    def __init__(self, seq_len: int, burn_in: int, stride: int, n_envs: int) -> None:
        owner = "SequenceAdder"
        self.seq_len = _int(seq_len, "seq_len", 1, owner)
        self.burn_in = _int(burn_in, "burn_in", 0, owner)
        self.length = self.seq_len + self.burn_in
        self.stride = _int(stride, "stride", 1, owner)
        if self.stride > self.length:
            raise ValueError(f"SequenceAdder: stride {stride} is longer than a sequence (burn_in "
                             f"{burn_in} + seq_len {seq_len} = {self.length}); steps would be skipped. "
                             f"Use 1 <= stride <= {self.length} (R2D2: seq_len 80, burn_in 40, stride 40)")
        self.n_envs = _int(n_envs, "n_envs", 1, owner)
        self._win: Optional[Dict[Path, np.ndarray]] = None  # [n_envs, L, *row] per flattened key
        self._count = np.zeros(self.n_envs, np.int64)  # steps in each env's window
        self._new = np.zeros(self.n_envs, np.int64)  # of those, steps no emitted sequence held
        self.dropped_steps = 0

    @property
    def pending(self) -> int:
        """Steps held in open windows that no emitted sequence holds yet."""
        return int(self._new.sum())

    # -- adding ---------------------------------------------------------------------------
    def add(self, record: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
        """Add one vector step; return the sequences it completed, or None."""
        rows = self._rows(record)
        flags = {k: rows.pop((k,)).astype(bool) if k == "valid" else rows[(k,)].astype(bool)
                 for k in ("first", "terminated", "truncated", "valid") if (k,) in rows}
        valid = flags.get("valid", np.ones(self.n_envs, bool))
        if self._win is None:
            self._win = {p: np.zeros((self.n_envs, self.length) + a.shape[1:], a.dtype)
                         for p, a in rows.items()}
        out: List[Dict[Path, np.ndarray]] = []
        # a restarted env, or an episode start on an open window: the old episode is over
        self._close(np.flatnonzero((~valid | flags["first"]) & (self._count > 0)), out)
        env = np.flatnonzero(valid)
        pos = self._count[env]
        for path, arr in rows.items():
            self._win[path][env, pos] = arr[env]
        self._count[env] += 1
        self._new[env] += 1
        ended = valid & (flags["terminated"] | flags["truncated"])
        full = valid & ~ended & (self._count == self.length)
        self._close(np.flatnonzero(ended), out)
        if full.any():
            self._emit_full(np.flatnonzero(full), out)
        if not out:
            return None
        return unflatten({p: np.concatenate([o[p] for o in out]) for p in out[0]})

    def extend(self, records: List[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
        """`add` each record in order; all the sequences they completed as one dict (or None)."""
        done = [flatten(s) for s in (self.add(r) for r in records) if s is not None]
        if not done:
            return None
        return unflatten({p: np.concatenate([d[p] for d in done]) for p in done[0]})

    def _rows(self, record: Mapping[str, Any]) -> Dict[Path, np.ndarray]:
        owner = "SequenceAdder.add"
        if not isinstance(record, Mapping):
            raise TypeError(f"{owner} takes one step record (a dict of [n_envs, ...] arrays), got "
                            f"{type(record).__name__}")
        rows, n = as_rows(flatten(record), owner)
        for key in ("first", "terminated", "truncated"):
            if (key,) not in rows:
                raise KeyError(f"{owner}: the step lacks {key!r} (it has {_names(rows)}); a recurrent "
                               "step record holds first, state, terminated and truncated")
        if not any(p[0] == "state" for p in rows):
            raise KeyError(f"{owner}: the step lacks 'state' (it has {_names(rows)}); the acting path "
                           "records it for recurrent policies (a policy with recurrent = True)")
        if n != self.n_envs:
            raise ValueError(f"{owner}: the step has {n} rows, expected n_envs={self.n_envs}")
        for key in ("mask", "new_steps"):
            if (key,) in rows:
                raise KeyError(f"{owner}: key {key!r} is reserved (the adder adds it to each "
                               "sequence); rename it in the step record")
        if self._win is not None:
            keys = {p for p in rows if p[0] not in _NOT_STORED}
            if keys != self._win.keys():
                diff = sorted(path_name(p) for p in keys ^ set(self._win))
                raise KeyError(f"{owner}: keys {diff} differ from the first step's; add the same "
                               "keys every step")
            for path, win in self._win.items():
                arr = rows[path]
                if arr.shape[1:] != win.shape[2:] or not np.can_cast(arr.dtype, win.dtype, "same_kind"):
                    raise ValueError(f"{owner}: key {path_name(path)!r} has rows of shape "
                                     f"{arr.shape[1:]} and dtype {arr.dtype}; the first step's were "
                                     f"{win.shape[2:]} and {win.dtype}")
        return rows

    # -- emitting -------------------------------------------------------------------------
    def _take(self, env: np.ndarray) -> Dict[Path, np.ndarray]:
        """The windows of `env` as sequences (copies), padding zeroed, with state/mask/new_steps."""
        assert self._win is not None
        mask = np.arange(self.length) < self._count[env, None]
        seq: Dict[Path, np.ndarray] = {}
        for path, win in self._win.items():
            if path[0] == "state":
                seq[path] = win[env, 0]
            else:
                arr = win[env]
                arr[~mask] = 0
                seq[path] = arr
        seq[("mask",)] = mask
        seq[("new_steps",)] = self._new[env].copy()
        return seq

    def _close(self, env: np.ndarray, out: List[Dict[Path, np.ndarray]]) -> None:
        """End the episodes of `env`: emit the windows that hold a learnable new step."""
        if env.size == 0:
            return
        keep = (self._new[env] > 0) & (self._count[env] > self.burn_in)
        self.dropped_steps += int(self._new[env[~keep]].sum())
        if keep.any():
            out.append(self._take(env[keep]))
        self._count[env] = 0
        self._new[env] = 0

    def _emit_full(self, env: np.ndarray, out: List[Dict[Path, np.ndarray]]) -> None:
        """Emit the full windows of `env` and keep their last L - stride steps."""
        assert self._win is not None
        out.append(self._take(env))
        overlap = self.length - self.stride
        for win in self._win.values():
            win[env, :overlap] = win[env, self.stride:]
        self._count[env] = overlap
        self._new[env] = 0

    def clear(self) -> None:
        """Drop every open window (e.g. after resetting all envs by hand)."""
        self._count[:] = 0
        self._new[:] = 0

    # -- state ----------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        """The open windows and counters (copies), for exact resume."""
        return {"kind": "SequenceAdder", "seq_len": self.seq_len, "burn_in": self.burn_in,
                "stride": self.stride, "n_envs": self.n_envs, "count": self._count.copy(),
                "new": self._new.copy(), "dropped_steps": self.dropped_steps,
                "windows": {} if self._win is None else
                unflatten({p: w.copy() for p, w in self._win.items()})}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a `state_dict()` saved by an adder with the same settings."""
        if state.get("kind") != "SequenceAdder":
            raise ValueError(f"SequenceAdder.load_state_dict: the state was saved by a "
                             f"{state.get('kind')!r}, not a SequenceAdder")
        for name in ("seq_len", "burn_in", "stride", "n_envs"):
            if int(state[name]) != getattr(self, name):
                raise ValueError(f"SequenceAdder.load_state_dict: the state has {name}={state[name]} "
                                 f"but this adder has {name}={getattr(self, name)}; build the adder "
                                 "with the saved settings")
        windows = flatten(state["windows"])
        self._win = {p: np.array(w) for p, w in windows.items()} or None
        self._count = np.array(state["count"], np.int64)
        self._new = np.array(state["new"], np.int64)
        self.dropped_steps = int(state["dropped_steps"])

    def __repr__(self) -> str:
        return (f"SequenceAdder(seq_len={self.seq_len}, burn_in={self.burn_in}, stride={self.stride}, "
                f"n_envs={self.n_envs}, pending={self.pending})")


def _names(flat: Mapping[Path, Any]) -> List[str]:
    return sorted({path_name(p) for p in flat})
