"""`SampleRatioController`: bound how far training runs ahead of collection."""
from __future__ import annotations

import sys
import threading
from fractions import Fraction
from typing import Any, Dict, Mapping, Optional

UNLIMITED = sys.maxsize
"""What `allowed_updates()` returns when no ratio is set (past `min_samples`)."""


class SampleRatioController:
    """Counts inserted transitions and sampled batches; says how many updates may run now.

    - Until `min_samples` transitions have been inserted, no update is allowed.
    - Then, with `max_updates_per_step = r`, at most `floor(inserted * r)` batches may have been
      sampled in total: `allowed_updates() = floor(inserted * r) - sampled` (never negative).
      `r = 0.25` is one update per 4 env steps, `r = 2.0` two updates per env step.
    - With `max_updates_per_step=None` there is no ratio bound (`allowed_updates()` returns
      `UNLIMITED` once `min_samples` is reached).

    A buffer that owns a controller calls `on_insert(n)` in `push` and `on_sample()` in `sample`,
    so a learner only asks `allowed_updates()` (or `can_sample()`); it need not read env steps.
    Thread-safe: the writer and the reader may call it concurrently.
    """

    def __init__(self, min_samples: int = 0, max_updates_per_step: Optional[float] = None) -> None:
        if int(min_samples) != min_samples or min_samples < 0:
            raise ValueError(f"SampleRatioController: min_samples must be an int >= 0, got {min_samples!r}")
        if max_updates_per_step is not None and not max_updates_per_step > 0:
            raise ValueError(
                "SampleRatioController: max_updates_per_step must be > 0 (updates per inserted "
                f"transition) or None for no bound, got {max_updates_per_step!r}"
            )
        self.min_samples = int(min_samples)
        self.max_updates_per_step = None if max_updates_per_step is None else float(max_updates_per_step)
        # Exact rational ratio: floor(100 * 0.57) must be 57, not 56.
        self._ratio = None if max_updates_per_step is None else Fraction(repr(float(max_updates_per_step)))
        self._inserted = 0
        self._sampled = 0
        self._lock = threading.Lock()

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

    def allowed_updates(self) -> int:
        """How many batches may be sampled now (0 until `min_samples` transitions are in)."""
        with self._lock:
            inserted, sampled = self._inserted, self._sampled
        if inserted < self.min_samples:
            return 0
        if self._ratio is None:
            return UNLIMITED
        budget = inserted * self._ratio.numerator // self._ratio.denominator
        return max(0, budget - sampled)

    def can_sample(self) -> bool:
        """True when at least one update is allowed now."""
        return self.allowed_updates() > 0

    def state_dict(self) -> Dict[str, Any]:
        with self._lock:
            return {"inserted": self._inserted, "sampled": self._sampled,
                    "min_samples": self.min_samples, "max_updates_per_step": self.max_updates_per_step}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore the counters. The configuration (min_samples, ratio) stays the constructor's."""
        with self._lock:
            self._inserted = int(state["inserted"])
            self._sampled = int(state["sampled"])

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (f"SampleRatioController(min_samples={self.min_samples}, "
                f"max_updates_per_step={self.max_updates_per_step}, inserted={self._inserted}, "
                f"sampled={self._sampled})")
