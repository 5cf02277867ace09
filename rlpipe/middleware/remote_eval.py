"""The learner's side of an evaluator process: its evaluations, and the final weights' one.

`RemoteEvaluations` is shared by the learners of every distributed run with an evaluator
process (`Exchange`): `take` puts the evaluations that arrived into the context (and emits
`eval_end`, so the logger and the checkpoint saver record them), `final` answers the run's
`FINAL_EVAL` request by publishing the weights the run ends with, marked final, and waiting
for their evaluation.

`TakeEvaluations` is the learner's first middleware in a run with an evaluator process and no
collector, such as an offline run in async mode: the learner trains from its data set while
the evaluator process evaluates the weights it publishes (`PublishWeights`, after the
trainer), so evaluation overlaps training instead of pausing it.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Optional

from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import Role, contract, current_task

from .evaluator import FINAL_EVAL, log_evaluation

log = logging.getLogger(__name__)

EVALUATIONS = "evaluations"
EVALUATOR_EXITS = "evaluator_exits"
"""Hub counter the evaluator process adds to when its main() returns (after its last message),
so that a learner waiting for a final evaluation knows none will come."""
FINAL_EVAL_TIMEOUT_S = 60.0  # the learner waits at most this long for the final weights' evaluation
EVAL_FIELDS = ("eval_value", "eval_output", "last_eval_iter", "last_eval_value", "eval_weights")
"""The context fields an evaluation from the evaluator process writes."""


class RemoteEvaluations:
    """The evaluator process's evaluations, on the learner. `link`: the learner's link;
    `publish(ctx, final=True)`: publishes the weights the run ends with (`PublishWeights`)."""

    def __init__(self, link: Any, publish: Any) -> None:
        self.link = link
        self.publish = publish
        self.evaluator_stopped = False  # the evaluator process ended the run (stop_value)

    def take(self, ctx: OnlineRLContext, task: Any = None, timeout: Optional[float] = 0.0) -> None:
        """Each evaluation that arrived (waiting up to `timeout` s for one; None: until one
        comes) into the context, logged, with `eval_end` emitted; an evaluation that reached
        stop_value finishes the run."""
        task = task if task is not None else current_task()
        for m in self.link.pop(EVALUATIONS, None, timeout):
            ctx.eval_value = m["eval_value"]
            ctx.eval_output = m["eval_output"]
            ctx.last_eval_iter = m["train_iter"]  # the weights evaluated were of that iteration
            ctx.last_eval_value = m["eval_value"]
            ctx.eval_weights = m.get("weights")  # so that best.pt holds what was evaluated
            log_evaluation(ctx, "final eval" if m.get("final") else "eval", "evaluator process")
            task.emit("eval_end", ctx)
            ctx.eval_weights = None
            if m["stop"]:
                self.evaluator_stopped = True
                log.info("the evaluator reached stop_value: finishing")
                task.finish = True

    def final(self, ctx: OnlineRLContext, task: Any) -> None:
        """Publish the weights the run ends with, marked final, and wait for the evaluator
        process's evaluation of them (taking any earlier ones that arrive first)."""
        if ctx.last_eval_iter == ctx.train_iter:
            return
        if self.evaluator_stopped:
            log.info("the evaluator process ended the run at stop_value with the weights of "
                     "train_iter %d and has stopped: the run's last evaluation is that one",
                     ctx.last_eval_iter)
            return
        self.publish.publish(ctx, final=True)
        log.info("waiting for the evaluator process to evaluate the final weights "
                 "(train_iter %d)", ctx.train_iter)
        deadline = time.monotonic() + FINAL_EVAL_TIMEOUT_S
        while ctx.last_eval_iter != ctx.train_iter:
            state = self.link.state()
            if state["counters"].get(EVALUATOR_EXITS, 0) > 0:  # its last message is queued
                self.take(ctx, task)
                if ctx.last_eval_iter != ctx.train_iter:
                    log.warning("the evaluator process ended without evaluating the final "
                                "weights (train_iter %d): the summary reports its last "
                                "evaluation (train_iter %d)", ctx.train_iter,
                                ctx.last_eval_iter)
                return
            if state["finished"]:
                log.warning("the run was finished everywhere before the evaluator process "
                            "evaluated the final weights (train_iter %d): the summary reports "
                            "its last evaluation (train_iter %d)", ctx.train_iter,
                            ctx.last_eval_iter)
                return
            if time.monotonic() > deadline:
                log.warning("the evaluator process did not evaluate the final weights "
                            "(train_iter %d) within %.0f s: the summary reports its last "
                            "evaluation (train_iter %d)", ctx.train_iter, FINAL_EVAL_TIMEOUT_S,
                            ctx.last_eval_iter)
                return
            self.take(ctx, task, timeout=1.0)


@contract(reads=("train_iter",), writes=EVAL_FIELDS, role=Role.LEARNER, emits=("eval_end",),
          finishes=True)
class TakeEvaluations:
    """Learner of a run with an evaluator process and no collector, first in the chain: the
    first call publishes the initial weights (the evaluator process evaluates them as a single
    process evaluates before training); each call takes the evaluations that arrived, without
    waiting, so training never pauses for one (the evaluations run in the other process). It
    reads train_iter so that the trainer never updates the weights it is copying. Answers the
    run's `final_evaluation()` (see `RemoteEvaluations.final`)."""

    def __init__(self, remote: RemoteEvaluations) -> None:
        self.remote = remote
        self._published = False

    def attach(self, task: Any) -> None:
        """Called by `task.use`: answer `final_evaluation()` with the evaluator process."""
        task.on(FINAL_EVAL, lambda ctx: self.remote.final(ctx, task))

    def __call__(self, ctx: OnlineRLContext) -> None:
        if not self._published:  # the weights it starts with (a resumed run's too)
            self._published = True
            self.remote.publish.publish(ctx)
        self.remote.take(ctx)


__all__ = ["EVALUATOR_EXITS", "RemoteEvaluations", "TakeEvaluations"]
