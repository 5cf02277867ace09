"""`overrun_meter`: log the timing overruns of the real-time envs (`collect/overrun_rate`).

The real-time envs of `rlpipe.envs.make_realtime_env` count their overruns (a time step that
started after its nominal end plus rtgym's elasticity). In one process the meter reads this
process's totals; in a distributed run each collector adds its new counts to the run's counters
(`rt_time_steps`, `rt_overruns`) and the learner logs the rate over all collectors. In a single
process the evaluator's real-time envs count too (they live in the same process).
"""
from __future__ import annotations

from typing import Any, Callable, Dict

from rlpipe.engine import Role, contract, parallel
from rlpipe.envs import realtime_overruns

STEPS, OVERRUNS = "rt_time_steps", "rt_overruns"


def overrun_meter() -> Callable[[Any], None]:
    """Writes `collect/overrun_rate`, `collect/overruns` and `collect/rt_time_steps` into
    `ctx.info_for_logging` (on the learner, or the single process)."""
    sent = {STEPS: 0, OVERRUNS: 0}

    def _log(ctx: Any, steps: float, overruns: float) -> None:
        rate = overruns / steps if steps else 0.0
        ctx.info_for_logging = {**(ctx.info_for_logging or {}), "collect/overrun_rate": rate,
                                "collect/overruns": float(overruns),
                                "collect/rt_time_steps": float(steps)}

    def _meter(ctx: Any) -> None:
        link = parallel.link()
        if link is None:
            now = realtime_overruns()
            _log(ctx, now["time_steps"], now["overruns"])
        elif link.role is Role.COLLECTOR:
            now = realtime_overruns()
            delta: Dict[str, float] = {STEPS: now["time_steps"] - sent[STEPS],
                                       OVERRUNS: now["overruns"] - sent[OVERRUNS]}
            if delta[STEPS]:
                link.add(delta)
                sent[STEPS], sent[OVERRUNS] = now["time_steps"], now["overruns"]
        elif link.role is Role.LEARNER:
            counters = link.state()["counters"]
            _log(ctx, counters.get(STEPS, 0), counters.get(OVERRUNS, 0))

    return contract(optional_reads=("info_for_logging",), writes=("info_for_logging",))(_meter)


__all__ = ["overrun_meter"]
