"""Learners: run the policy's update on fetched data and count train iterations."""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, List

import numpy as np

from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import Role, contract

from ._cfg import setting


class NonFiniteLossError(FloatingPointError):
    """A training step produced a NaN or infinite loss."""


def check_finite(stats: Dict[str, Any], where: str, train_iter: int) -> None:
    """Raise naming the loss term when a scalar training statistic is NaN or infinite."""
    for key, value in stats.items():
        if isinstance(value, (float, int, np.floating)) and not math.isfinite(value):
            raise NonFiniteLossError(
                f"{where}: '{key}' is {value} at train_iter {train_iter}. Lower the learning "
                f"rate, enable gradient clipping (policy.learn.grad_clip), or check rewards "
                f"and observations for NaN; the last checkpoint holds finite weights."
            )


def mean_stats(outputs: List[Dict[str, Any]]) -> Dict[str, float]:
    """Average the scalar statistics of several updates."""
    keys = [k for k, v in outputs[0].items() if np.isscalar(v)]
    return {k: float(np.mean([o[k] for o in outputs])) for k in keys}


def trainer(cfg: Any, policy: Any) -> Callable:
    """One update on `ctx.train_data` (skipped when it is None); `train_iter` += 1."""

    @contract(reads=("train_data", "train_iter"), writes=("train_output", "train_iter"),
              role=Role.LEARNER)
    def _trainer(ctx: OnlineRLContext) -> None:
        if ctx.train_data is None:
            return
        output = policy.forward(ctx.train_data)
        check_finite(output, "trainer", ctx.train_iter)
        ctx.train_output = output
        ctx.train_iter += 1

    return _trainer


@contract(reads=("train_iter",), writes=("train_iter", "train_output", "train_data"),
          role=Role.LEARNER)
class OffPolicyLearner:
    """Up to `cfg.policy.learn.update_per_collect` updates per iteration from `buffer_`.

    The buffer's sample-ratio controller (when it has one) caps the updates: none before its
    minimum number of samples, and never more updates per inserted step than its ratio. The
    learner reads no collector field, so in async mode it trains while collection runs.
    """

    def __init__(self, cfg: Any, policy: Any, buffer_: Any) -> None:
        self.policy = policy
        self.buffer = buffer_
        self.batch_size = int(setting(cfg, "policy.learn.batch_size"))
        self.update_per_collect = int(setting(cfg, "policy.learn.update_per_collect"))

    def _updates_allowed(self) -> int:
        if len(self.buffer) < self.batch_size:
            return 0
        controller = getattr(self.buffer, "controller", None)
        if controller is None:
            return self.update_per_collect
        return max(0, min(self.update_per_collect, controller.allowed_updates()))

    def __call__(self, ctx: OnlineRLContext) -> None:
        outputs = []
        for _ in range(self._updates_allowed()):
            batch = self.buffer.sample(self.batch_size)
            output = self.policy.forward(batch)
            check_finite(output, "OffPolicyLearner", ctx.train_iter)
            if "priority" in output and hasattr(self.buffer, "update_priority"):
                self.buffer.update_priority(batch["index"], output.pop("priority"))
            outputs.append(output)
            ctx.train_iter += 1
        if outputs:
            ctx.train_output = mean_stats(outputs)
