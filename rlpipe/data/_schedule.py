"""`UpdateSchedule`: how many updates an iteration may run, and why.

Every rule of the update-to-data schedule lives here, so a learner asks one object:

- **per iteration** — at most `per_iteration` updates (`policy.learn.update_per_collect`);
- **a full batch** — none while the buffer holds fewer than `batch_size` rows;
- **warm-up** — none until `min_samples` transitions have been inserted;
- **ratio** — with `max_updates_per_step = r`, at most `floor(inserted * r)` batches sampled in
  total (TMRL's `max_training_steps_per_env_step`, RL.jl's `InsertSampleRatioController`).

The schedule lives with the buffer: the buffer calls `on_insert(n)` in `push` and `on_sample()` in
`sample`, so the counters are exact whoever samples, and they are saved in the buffer's state for
exact resume. A learner calls `allowed(rows)` once per iteration and reads no env-step counter, so
in async mode it trains while collection runs.
"""
from __future__ import annotations

import sys
import threading
from fractions import Fraction
from typing import Any, Dict, Mapping, Optional, Tuple

from ._locked import PicklesWithoutLock

UNLIMITED = sys.maxsize
"""What `allowed_updates()` returns when no ratio is set (past `min_samples`)."""


def _positive_int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or int(value) != value or value < minimum:
        raise ValueError(f"UpdateSchedule: {name} must be an int >= {minimum}, got {value!r}")
    return int(value)


class UpdateSchedule(PicklesWithoutLock):
    """Counts inserted transitions and sampled batches; says how many updates may run now.

    `UpdateSchedule(min_samples=0, max_updates_per_step=None, per_iteration=None, batch_size=None)`;
    `None` leaves that rule out (a learner fills `per_iteration` and `batch_size` from its config
    with `complete()`). `UpdateSchedule.from_config(cfg)` builds the zoo's schedule.

    - `allowed(rows) -> (n_updates, reason)`: every rule; `reason` says in words which rule
      decided `n_updates` (e.g. "0 updates: warm-up, 200 of min_samples 1000 inserted").
    - `allowed_updates()`: the warm-up and ratio rules alone: `floor(inserted * r) - sampled`
      (never negative), `UNLIMITED` without a ratio, 0 before `min_samples`.

    Thread-safe: the writer and the reader may call it concurrently.
    `SampleRatioController` is the same class under its former name.
    """

    def __init__(self, min_samples: int = 0, max_updates_per_step: Optional[float] = None,
                 per_iteration: Optional[int] = None, batch_size: Optional[int] = None) -> None:
        self.min_samples = _positive_int(min_samples, "min_samples", 0)
        if max_updates_per_step is not None and not max_updates_per_step > 0:
            raise ValueError(
                "UpdateSchedule: max_updates_per_step must be > 0 (updates per inserted "
                f"transition) or None for no bound, got {max_updates_per_step!r}"
            )
        self.max_updates_per_step = None if max_updates_per_step is None else float(max_updates_per_step)
        # Exact rational ratio: floor(100 * 0.57) must be 57, not 56.
        self._ratio = None if max_updates_per_step is None else Fraction(repr(float(max_updates_per_step)))
        self.per_iteration = None if per_iteration is None else _positive_int(per_iteration, "per_iteration", 1)
        self.batch_size = None if batch_size is None else _positive_int(batch_size, "batch_size", 1)
        self._inserted = 0
        self._sampled = 0
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, cfg: Mapping) -> "UpdateSchedule":
        """The schedule of a run config: `replay.min_samples`, `replay.max_updates_per_step`
        (None: `policy.learn.update_per_collect / policy.collect.n_sample`, exactly the configured
        updates per collected step), `policy.learn.update_per_collect` and `policy.learn.batch_size`."""
        per_iteration = _lookup(cfg, "policy.learn.update_per_collect")
        ratio = _lookup(cfg, "replay.max_updates_per_step", None)
        if ratio is None:
            ratio = per_iteration / _lookup(cfg, "policy.collect.n_sample")
        return cls(min_samples=_lookup(cfg, "replay.min_samples", 0), max_updates_per_step=ratio,
                   per_iteration=per_iteration, batch_size=_lookup(cfg, "policy.learn.batch_size"))

    def complete(self, per_iteration: int, batch_size: int, where: str = "learner") -> None:
        """Fill the rules left None from a learner's config; a rule already set must agree
        (`where` names the learner in the error)."""
        for name, value in (("per_iteration", per_iteration), ("batch_size", batch_size)):
            value = _positive_int(value, name, 1)
            current = getattr(self, name)
            if current is None:
                setattr(self, name, value)
            elif current != value:
                key = "update_per_collect" if name == "per_iteration" else "batch_size"
                raise ValueError(
                    f"{where}: the buffer's UpdateSchedule has {name}={current} but the config's "
                    f"policy.learn.{key} is {value}; build the schedule from the same config "
                    f"(UpdateSchedule.from_config(cfg)) or leave {name} None"
                )

    # -- counting (called by the buffer) ----------------------------------------------------
    @property
    def inserted(self) -> int:
        """Transitions inserted so far."""
        return self._inserted

    @property
    def sampled(self) -> int:
        """Batches sampled (updates) so far."""
        return self._sampled

    def on_insert(self, n: int) -> None:
        """Record `n` inserted transitions."""
        with self._lock:
            self._inserted += int(n)

    def on_sample(self, n: int = 1) -> None:
        """Record `n` sampled batches."""
        with self._lock:
            self._sampled += int(n)

    # -- deciding -----------------------------------------------------------------------------
    def allowed_updates(self) -> int:
        """How many batches the warm-up and ratio rules allow now (0 until `min_samples`)."""
        with self._lock:
            inserted, sampled = self._inserted, self._sampled
        return self._budget(inserted, sampled)

    def _budget(self, inserted: int, sampled: int) -> int:
        if inserted < self.min_samples:
            return 0
        if self._ratio is None:
            return UNLIMITED
        return max(0, inserted * self._ratio.numerator // self._ratio.denominator - sampled)

    def can_sample(self) -> bool:
        """True when the warm-up and ratio rules allow at least one update now."""
        return self.allowed_updates() > 0

    def allowed(self, rows: int) -> Tuple[int, str]:
        """(updates this iteration may run, why) for a buffer that holds `rows` rows."""
        with self._lock:
            inserted, sampled = self._inserted, self._sampled
        if inserted < self.min_samples:
            return 0, f"0 updates: warm-up, {inserted} of min_samples {self.min_samples} inserted"
        if self.batch_size is not None and rows < self.batch_size:
            return 0, f"0 updates: the buffer holds {rows} rows, fewer than batch_size {self.batch_size}"
        budget = self._budget(inserted, sampled)
        cap = UNLIMITED if self.per_iteration is None else self.per_iteration
        if budget < cap:
            return budget, (f"{budget} updates: ratio cap, max_updates_per_step "
                            f"{self.max_updates_per_step} x {inserted} inserted allows "
                            f"{budget + sampled} in all, {sampled} done")
        if self.per_iteration is None:
            return UNLIMITED, "unlimited updates: no per-iteration cap and no ratio"
        return cap, f"{cap} updates: update_per_collect"

    # -- state ----------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        """The counters (and, for reading, the warm-up and ratio settings)."""
        with self._lock:
            return {"inserted": self._inserted, "sampled": self._sampled,
                    "min_samples": self.min_samples, "max_updates_per_step": self.max_updates_per_step}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore the counters. The rules (min_samples, ratio, caps) stay the constructor's."""
        with self._lock:
            self._inserted = int(state["inserted"])
            self._sampled = int(state["sampled"])

    def __repr__(self) -> str:
        return (f"UpdateSchedule(min_samples={self.min_samples}, "
                f"max_updates_per_step={self.max_updates_per_step}, "
                f"per_iteration={self.per_iteration}, batch_size={self.batch_size}, "
                f"inserted={self._inserted}, sampled={self._sampled})")


SampleRatioController = UpdateSchedule
"""The former name of `UpdateSchedule` (its warm-up and ratio rules), kept for scripts."""

_MISSING = object()


def _lookup(cfg: Mapping, dotted: str, default: Any = _MISSING) -> Any:
    node: Any = cfg
    for part in dotted.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif default is not _MISSING:
            return default
        else:
            raise KeyError(f"UpdateSchedule.from_config: the config has no '{dotted}'; add it to "
                           f"the run config or pass --set {dotted}=VALUE")
    return node
