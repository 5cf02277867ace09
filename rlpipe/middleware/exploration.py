"""Exploration schedules for collection."""
from __future__ import annotations

import math
from typing import Any, Callable

from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import Role, contract

from ._cfg import setting

SCHEDULES = ("linear", "exp")


def epsilon_schedule(kind: str, start: float, end: float, decay: int) -> Callable[[int], float]:
    """eps as a function of env steps: `linear` reaches `end` at `decay` steps; `exp` decays
    with time constant `decay` (eps = end + (start - end) * exp(-step / decay))."""
    if kind not in SCHEDULES:
        raise ValueError(f"epsilon schedule type {kind!r} is unknown; use one of {SCHEDULES}")
    if decay <= 0:
        raise ValueError(f"epsilon decay must be a positive number of env steps, got {decay}")
    if kind == "linear":
        return lambda step: end + (start - end) * max(0.0, 1.0 - step / decay)
    return lambda step: end + (start - end) * math.exp(-step / decay)


def eps_greedy_handler(cfg: Any) -> Callable:
    """Set `ctx.collect_kwargs['eps']` from `cfg.policy.other.eps` {type, start, end, decay}
    and the run's env steps."""
    eps_cfg = setting(cfg, "policy.other.eps")
    schedule = epsilon_schedule(
        str(eps_cfg.get("type", "linear")), float(eps_cfg["start"]), float(eps_cfg["end"]),
        int(eps_cfg["decay"]),
    )

    @contract(reads=("env_step",), writes=("collect_kwargs",), role=Role.COLLECTOR)
    def _eps_greedy(ctx: OnlineRLContext) -> None:
        ctx.collect_kwargs = {**ctx.collect_kwargs, "eps": schedule(ctx.env_step)}

    return _eps_greedy
