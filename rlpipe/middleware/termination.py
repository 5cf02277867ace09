"""`termination_checker`: end the run when an env-step, train-iteration or wall-time limit is hit."""
from __future__ import annotations

import logging
import time
from typing import Any, Callable, List, Optional, Tuple

from rlpipe.engine import Role, contract, current_task

logger = logging.getLogger(__name__)


def _check_limit(name: str, value: Optional[float]) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(
            f"termination_checker({name}={value!r}): a limit must be a positive number "
            f"(or None to leave it unset)."
        )


def termination_checker(
    max_env_step: Optional[int] = None,
    max_train_iter: Optional[int] = None,
    max_wall_time: Optional[float] = None,
) -> Callable[[Any], None]:
    """Set `current_task().finish = True` once any given limit is reached.

    - `max_env_step`: end when `ctx.env_step >= max_env_step`.
    - `max_train_iter`: end when `ctx.train_iter >= max_train_iter`.
    - `max_wall_time`: end when this many seconds have passed since the checker was made.

    The run still completes the current iteration (later middleware see `finish` set, so a
    checkpoint saver writes its final checkpoint). The limit that ended the run is logged at INFO
    level on the `rlpipe.middleware.termination` logger. The contract reads only the counters of
    the limits that are set, so the checker overlaps freely in async mode.
    """
    _check_limit("max_env_step", max_env_step)
    _check_limit("max_train_iter", max_train_iter)
    _check_limit("max_wall_time", max_wall_time)
    if max_env_step is None and max_train_iter is None and max_wall_time is None:
        raise ValueError(
            "termination_checker() needs at least one limit: pass max_env_step=..., "
            "max_train_iter=... or max_wall_time=... (seconds)."
        )

    counters: List[Tuple[str, str, float]] = []  # (ctx field, limit name, limit value)
    if max_env_step is not None:
        counters.append(("env_step", "max_env_step", max_env_step))
    if max_train_iter is not None:
        counters.append(("train_iter", "max_train_iter", max_train_iter))
    started = time.monotonic()
    reported = False

    def _terminate(ctx: Any) -> None:
        nonlocal reported
        reasons = []
        for field, limit_name, limit in counters:
            value = getattr(ctx, field, None)
            if value is None:
                raise AttributeError(
                    f"termination_checker({limit_name}={limit}) reads ctx.{field}, but "
                    f"{type(ctx).__name__} has no such field: use a context that declares it "
                    f"(e.g. OnlineRLContext) or drop {limit_name}."
                )
            if value >= limit:
                reasons.append(f"{field}={value} reached {limit_name}={limit}")
        if max_wall_time is not None:
            elapsed = time.monotonic() - started
            if elapsed >= max_wall_time:
                reasons.append(f"wall time {elapsed:.1f}s reached max_wall_time={max_wall_time}s")
        if not reasons:
            return
        current_task().finish = True
        if not reported:
            reported = True
            logger.info("termination_checker ends the run: %s", "; ".join(reasons))

    return contract(reads=tuple(field for field, _, _ in counters), writes=(),
                    role=Role.LEARNER, finishes=True)(_terminate)


__all__ = ["termination_checker"]
