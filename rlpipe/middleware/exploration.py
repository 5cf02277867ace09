"""Exploration schedules for collection.

`eps_greedy_handler` puts ε into `ctx.collect_kwargs` once per iteration. By default that is a
number, ε at the iteration's first env step, used for every step of the iteration. With
`policy.other.eps.per_env_step: True` it is a `PerEnvStep` holding the schedule instead, and
the acting path (`_acting.Acting.act`, via `kwargs_at`) evaluates it at the env step of every
action, as SB3 does: one schedule, evaluated at a finer grain.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Mapping

from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import Role, contract

from ._cfg import setting

SCHEDULES = ("linear", "exp")


@dataclasses.dataclass(frozen=True)
class EpsilonSchedule:
    """ε as a function of env steps: `linear` reaches `end` at `decay` steps; `exp` decays with
    time constant `decay` (ε = end + (start - end) · exp(-step / decay)). A plain object (not a
    closure), so a context holding it pickles."""

    kind: str
    start: float
    end: float
    decay: int

    def __call__(self, step: int) -> float:
        if self.kind == "linear":
            return self.end + (self.start - self.end) * max(0.0, 1.0 - step / self.decay)
        return self.end + (self.start - self.end) * math.exp(-step / self.decay)


def epsilon_schedule(kind: str, start: float, end: float, decay: int) -> Callable[[int], float]:
    """ε as a function of env steps (see `EpsilonSchedule`)."""
    if kind not in SCHEDULES:
        raise ValueError(f"epsilon schedule type {kind!r} is unknown; use one of {SCHEDULES}")
    if decay <= 0:
        raise ValueError(f"epsilon decay must be a positive number of env steps, got {decay}")
    return EpsilonSchedule(kind, float(start), float(end), int(decay))


@dataclasses.dataclass(frozen=True)
class PerEnvStep:
    """A collect kwarg that the acting path evaluates at the env step of each action:
    `value(env_step)`. Only rlpipe's collectors and inferencer resolve it (`kwargs_at`); code
    that calls a collect face itself must pass the number."""

    schedule: Callable[[int], float]

    def __call__(self, env_step: int) -> float:
        return self.schedule(env_step)

    def __float__(self) -> float:
        raise TypeError(f"{self!r} is a per-env-step value: evaluate it at the current env step "
                        f"(value(env_step), or rlpipe.middleware.kwargs_at(collect_kwargs, "
                        f"env_step)) before passing it to a policy, or set "
                        f"policy.other.eps.per_env_step=False for one number per iteration")


def kwargs_at(collect_kwargs: Mapping[str, Any], env_step: int) -> Mapping[str, Any]:
    """`collect_kwargs` with every `PerEnvStep` value evaluated at `env_step` (the mapping
    itself when it holds none)."""
    if not any(isinstance(v, PerEnvStep) for v in collect_kwargs.values()):
        return collect_kwargs
    return {k: v(env_step) if isinstance(v, PerEnvStep) else v for k, v in collect_kwargs.items()}


def eps_greedy_handler(cfg: Any) -> Callable:
    """Set `ctx.collect_kwargs['eps']` from `cfg.policy.other.eps` {type, start, end, decay,
    per_env_step} and the run's env steps: ε at the iteration's first env step, or with
    `per_env_step` True a `PerEnvStep` that the collector evaluates before every env step."""
    eps_cfg = setting(cfg, "policy.other.eps")
    schedule = epsilon_schedule(
        str(eps_cfg.get("type", "linear")), float(eps_cfg["start"]), float(eps_cfg["end"]),
        int(eps_cfg["decay"]),
    )
    per_step = eps_cfg.get("per_env_step", False)
    if not isinstance(per_step, bool):
        raise TypeError(f"policy.other.eps.per_env_step must be True or False, got "
                        f"{per_step!r}")
    if per_step:
        per_env_step = PerEnvStep(schedule)

        @contract(writes=("collect_kwargs",), role=Role.COLLECTOR)
        def _eps_greedy_per_step(ctx: OnlineRLContext) -> None:
            ctx.collect_kwargs = {**ctx.collect_kwargs, "eps": per_env_step}

        return _eps_greedy_per_step

    @contract(reads=("env_step",), writes=("collect_kwargs",), role=Role.COLLECTOR)
    def _eps_greedy(ctx: OnlineRLContext) -> None:
        ctx.collect_kwargs = {**ctx.collect_kwargs, "eps": schedule(ctx.env_step)}

    return _eps_greedy


def eps_greedy_masker() -> Callable:
    """Greedy collection (ε = 0) every iteration: DI-engine's middleware for collecting expert
    demonstrations without random actions (its ε = -1 means the same there)."""

    @contract(writes=("collect_kwargs",), role=Role.COLLECTOR)
    def _eps_greedy_masker(ctx: OnlineRLContext) -> None:
        ctx.collect_kwargs = {**ctx.collect_kwargs, "eps": 0.0}

    return _eps_greedy_masker
