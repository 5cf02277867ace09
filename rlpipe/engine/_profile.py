"""Per-middleware timings of a run, as returned by `task.profile()`."""
from __future__ import annotations

import dataclasses
from typing import Tuple


def format_seconds(seconds: float) -> str:
    """Seconds with a readable unit: '12.3 µs', '4.56 ms', '1.23 s'."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1.0:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


@dataclasses.dataclass(frozen=True)
class MiddlewareStats:
    """Calls and time of one middleware of the chain (pre- and post-`yield` time together)."""

    position: int
    name: str
    count: int
    total_s: float

    @property
    def mean_s(self) -> float:
        return self.total_s / self.count if self.count else 0.0


@dataclasses.dataclass(frozen=True)
class Profile:
    """Timings since `task.start()`; `str(profile)` is a table."""

    middleware: Tuple[MiddlewareStats, ...]
    iterations: int
    wall_s: float
    """Wall time spent inside `run()` iterations (including renews)."""
    async_mode: bool

    @property
    def wall_per_iteration_s(self) -> float:
        return self.wall_s / self.iterations if self.iterations else 0.0

    @property
    def busy_s(self) -> float:
        """Sum of the time of every middleware call."""
        return sum(m.total_s for m in self.middleware)

    @property
    def overlap(self) -> float:
        """Sum of middleware time / wall time: above 1 means middleware ran concurrently."""
        return self.busy_s / self.wall_s if self.wall_s > 0 else 0.0

    def __str__(self) -> str:
        width = max([len("middleware")] + [len(m.name) for m in self.middleware])
        lines = [f"{'#':>3}  {'middleware':<{width}}  {'calls':>8}  {'total':>10}  {'mean':>10}"]
        for m in self.middleware:
            lines.append(f"{m.position:>3}  {m.name:<{width}}  {m.count:>8}  "
                         f"{format_seconds(m.total_s):>10}  {format_seconds(m.mean_s):>10}")
        mode = "async" if self.async_mode else "sync"
        lines.append(f"{self.iterations} iterations ({mode}), wall {format_seconds(self.wall_s)}, "
                     f"{format_seconds(self.wall_per_iteration_s)} per iteration")
        lines.append(f"overlap (middleware time / wall time): {self.overlap:.2f}")
        return "\n".join(lines)
