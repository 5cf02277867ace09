"""Evaluation by interaction: run the eval policy for whole episodes, report the mean return."""
from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any, Callable, Iterator, List

import numpy as np

from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import Role, contract, current_task

from ._acting import EpisodeQuota
from ._acting_agents import mean_agent_returns
from ._cfg import setting
from ._make_acting import make_acting

log = logging.getLogger(__name__)
FINAL_EVAL = "final_eval"
"""The event `final_evaluation()` emits (with the context) to have the final weights evaluated."""


def evaluate_episodes(policy: Any, env: Any, n_episode: int) -> List[dict]:
    """Run `n_episode` episodes, spread evenly over the envs of `env` (`EpisodeQuota`), and
    return their {'return', 'length'} records. The envs are reset first, then `policy` acts
    through the acting path (`make_acting`): it gets the env's action masks as `action_mask=`,
    a recurrent policy its own `state=` and `first=` per env (zeroed where an episode starts),
    and in a multi-agent env manager `agent_mask=` and `global_state=`; there an episode's
    return is the team return and its record adds `agent_returns` (see `_acting_agents`)."""
    acting = make_acting(policy, env)
    acting.cursor.current()  # reset now, even when no episode is asked for
    quota = EpisodeQuota(acting.n_envs, n_episode)
    records: List[dict] = []
    while quota.open():
        _, result = acting.play_step()
        for ep in result.episodes:
            if quota.take(ep["env_id"]):
                record = {"return": float(ep["return"]), "length": int(ep["length"])}
                if "agent_returns" in ep:
                    record["agent_returns"] = dict(ep["agent_returns"])
                records.append(record)
    return records


def log_evaluation(ctx: Any, source: str = "eval", where: str = "") -> None:
    """The one INFO line of an evaluation: the train_iter of the weights evaluated
    (`ctx.last_eval_iter`), the env step the metrics file and TensorBoard give it
    (`ctx.env_step` once the iteration's collection is counted), mean, std, episodes
    (and `where` it ran when that was another process)."""
    returns = np.asarray((ctx.eval_output or {}).get("returns", [ctx.eval_value]), dtype=float)
    env_step = getattr(ctx, "env_step", None)  # an offline context counts no env steps
    step = f", env_step {env_step}" if env_step is not None else ""
    log.info("%s at train_iter %d%s: mean return %.2f (std %.2f, %d episodes%s)",
             source, ctx.last_eval_iter, step, ctx.eval_value, returns.std(),
             len(returns), f", {where}" if where else "")


def interaction_evaluator(cfg: Any, policy: Any, env: Any, render: bool = False) -> Callable:
    """Every `cfg.policy.eval.evaluator.eval_freq` train iterations (and at the first and
    last iteration), evaluate `n_episode` episodes with `policy` (an eval face); set
    `ctx.eval_value`; finish the run when it reaches `cfg.env.stop_value`. In a multi-agent
    env the value is the mean team return and `ctx.eval_output["agent_returns"]` maps each agent
    to its mean return.

    The evaluation runs before the later middleware of the iteration (so "eval_end" listeners,
    such as the checkpoint saver's best.pt, see exactly the evaluated weights); its log line is
    written after them, with the env step the logger gives it. The evaluator also answers the
    `final_evaluation()` middleware (event `FINAL_EVAL`): it then evaluates the weights the run
    ends with, unless its last evaluation was of the same train_iter."""
    eval_freq = int(setting(cfg, "policy.eval.evaluator.eval_freq"))
    n_episode = int(setting(cfg, "policy.eval.evaluator.n_episode",
                            setting(cfg, "env.n_evaluator_episode", 10)))
    stop_value = setting(cfg, "env.stop_value", None)
    if n_episode <= 0:
        raise ValueError(f"policy.eval.evaluator.n_episode must be positive, got {n_episode}")

    # the iteration's evaluation whose line is not written yet: the final evaluation writes it
    # first when it runs in between, so log.txt reads in time order
    unlogged: List[SimpleNamespace] = []

    @contract(
        reads=("train_iter", "last_eval_iter"),
        writes=("eval_value", "eval_output", "last_eval_iter", "last_eval_value"),
        role=Role.EVALUATOR, emits=("eval_end",), finishes=stop_value is not None,
        optional_reads=("env_step",),
    )
    def _evaluator(ctx: OnlineRLContext) -> Iterator[None]:
        task = current_task()
        due = ctx.last_eval_iter < 0 or ctx.train_iter - ctx.last_eval_iter >= eval_freq
        if ctx.last_eval_iter == ctx.train_iter or not (due or task.finish):
            return
        evaluate(ctx, task)
        evaluated = SimpleNamespace(last_eval_iter=ctx.last_eval_iter, eval_value=ctx.eval_value,
                                    eval_output=ctx.eval_output,
                                    env_step=getattr(ctx, "env_step", None))
        unlogged.append(evaluated)
        yield
        if not unlogged:  # a final evaluation in between wrote the line
            return
        unlogged.clear()
        # after the collector: the env step of the metrics row. When another process's final
        # evaluation of later weights came in between, this one has a row of its own at the
        # env step it was made at (OnlineLogger), and the line gives that step.
        if ctx.last_eval_iter == evaluated.last_eval_iter:
            evaluated.env_step = getattr(ctx, "env_step", None)
        log_evaluation(evaluated)

    def evaluate(ctx: OnlineRLContext, task: Any) -> None:
        records = evaluate_episodes(policy, env, n_episode)
        returns = np.array([r["return"] for r in records])
        ctx.eval_value = float(returns.mean())
        ctx.eval_output = {"returns": returns.tolist(),
                           "lengths": [r["length"] for r in records]}
        per_agent = mean_agent_returns(records)
        if per_agent is not None:  # a multi-agent env: each agent's mean return
            ctx.eval_output["agent_returns"] = per_agent
        ctx.last_eval_iter = ctx.train_iter
        ctx.last_eval_value = ctx.eval_value
        task.emit("eval_end", ctx)
        if stop_value is not None and ctx.eval_value >= float(stop_value) and not task.finish:
            log.info("eval return %.2f reached stop_value %s: finishing", ctx.eval_value,
                     stop_value)
            task.finish = True

    def attach(task: Any) -> None:
        def final(ctx: OnlineRLContext) -> None:
            if ctx.last_eval_iter != ctx.train_iter:
                # this iteration's evaluation of earlier weights has a metrics row of its own
                # at the env step it was made at (OnlineLogger): its line gives that step
                while unlogged:
                    log_evaluation(unlogged.pop())
                evaluate(ctx, task)
                log_evaluation(ctx, "final eval")

        task.on(FINAL_EVAL, final)

    _evaluator.attach = attach  # type: ignore[attr-defined]  # called by task.use()
    return _evaluator



def envpool_evaluator(cfg: Any, policy: Any, env: Any, render: bool = False) -> Callable:
    """DI-engine's evaluator for its EnvPool env managers. rlpipe's `EnvManager` in EnvPool
    mode (`mode="envpool"`) hands back the same step results as its other modes (true final
    observations, no autoreset pseudo-steps), so this is `interaction_evaluator`."""
    return interaction_evaluator(cfg, policy, env, render=render)

@contract(reads=("train_iter", "last_eval_iter"), optional_reads=("env_step",),
          writes=("eval_value", "eval_output", "last_eval_iter", "last_eval_value",
                  "eval_weights"),
          role=Role.LEARNER, emits=(FINAL_EVAL,))
class FinalEvaluation:
    """The middleware made by `final_evaluation`."""

    def __init__(self) -> None:
        self._task: Any = None

    def attach(self, task: Any) -> None:
        """Called by `task.use`: also ask at the task's "finish" event (a finish set after this
        middleware ran in the last iteration, e.g. by a signal)."""
        self._task = task
        task.once("finish", self._request)

    def __call__(self, ctx: OnlineRLContext) -> None:
        task = current_task()
        if self._task is None:
            self._task = task
        if task.finish:
            self._request(ctx)

    def _request(self, ctx: OnlineRLContext) -> None:
        if ctx.last_eval_iter != ctx.train_iter and self._task.final_eval_wanted:
            self._task.emit(FINAL_EVAL, ctx)


def final_evaluation() -> FinalEvaluation:
    """Evaluate the weights a run ends with: in the iteration where `finish` is set (use it
    after the learner and the termination checker, before the logger and the checkpoint
    saver, so they record that evaluation), or at the task's "finish" event when the finish
    came later. It asks whoever answers the `FINAL_EVAL` event: the `interaction_evaluator`
    of this process, or the exchange, which has the evaluator process of a distributed run
    evaluate those weights. Nothing is asked when the last evaluation already ran on them
    (same `train_iter`), or when the run was ended with `task.end_run(reason, evaluate=False)`
    (a SIGTERM: its checkpoint must not wait for an evaluation)."""
    return FinalEvaluation()
