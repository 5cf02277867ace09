"""The end of every pipeline: when to stop, what to record, and the run's summary.

`run_tail` is the run's tail as middleware; `summary` is what a run returns, `format_summary`
and `json_summary` how `rlpipe train` prints it."""
from __future__ import annotations

import logging
import math
import time
from typing import Any, Dict, List, Optional

from rlpipe.middleware import CkptSaver, online_logger, progress_bar, termination_checker
from rlpipe.middleware.evaluator import final_evaluation
from rlpipe.middleware.progress import ProgressReporter, report_progress
from rlpipe.runs import RunDir

JSON_KEYS = ("eval_value", "best_eval_value", "final_eval_iter", "solved", "env_step",
             "train_iter", "wall_time", "run_dir")
"""The keys of the summary's JSON line (`rlpipe train` prints it last on stdout)."""


def run_tail(task: Any, cfg: Any, policy: Any, run_state: Any = None) -> None:
    """`task.use(...)` the run's tail: termination_checker, the final evaluation, then (with a
    run folder) logger and checkpoints, then the bar (on a Ray learner: `report_progress`, the driver draws the bar):
    the logger, best.pt and the bar see the final evaluation."""
    task.use(termination_checker(max_env_step=cfg.get("max_env_step"),  # none offline
                                 max_train_iter=cfg.max_train_iter,
                                 max_wall_time=cfg.max_wall_time))
    task.use(final_evaluation())
    if cfg.run_dir:
        task.use(online_logger(cfg, tensorboard=cfg.logger.tensorboard,
                               train_show_freq=cfg.logger.get("train_show_freq", 1)))
        task.use(CkptSaver(cfg, policy, train_freq=cfg.ckpt.train_freq, resume_state=run_state))
    reporter = ProgressReporter.attached(logging.getLogger("rlpipe"))
    if reporter is not None:  # the learner of a Ray run: the driver draws the bar
        task.use(report_progress(reporter))
    elif cfg.progress:
        task.use(progress_bar(cfg, total_env_steps=bar_total(cfg)))


def bar_total(cfg: Any) -> Optional[int]:
    """What the progress bar counts to: env steps online, train iterations offline."""
    if "max_env_step" in cfg:
        return cfg.max_env_step
    return cfg.get("max_train_iter")


def previous_best(cfg: Any) -> List[float]:
    """The best evaluation of the sessions before a resume (ckpt/latest.json's best_value), so
    the summary's best covers the whole run, as best.pt does; [] for a new run."""
    if not (cfg.get("resume_from") and cfg.get("run_dir")):
        return []
    record = RunDir(cfg.run_dir).read_latest() or {}
    best = record.get("best_value")
    return [float(best)] if isinstance(best, (int, float)) and math.isfinite(best) else []


def _finite(value: Any) -> Optional[float]:
    return float(value) if value is not None and math.isfinite(value) else None


def summary(cfg: Any, ctx: Any, best: List[float], start: float, profile: Any,
            budget_rule: str = "whole collections",
            ended_by: Optional[str] = None) -> Dict[str, Any]:
    """What `train()` returns: the final evaluation (of the weights the run ended with) and the
    best one (None when none ran), whether the best reached `env.stop_value`, counters, wall
    time, the run folder, the budget and the per-middleware profile. `budget_note` says how
    the env steps passed `max_env_step` when they did (`budget_rule`: the pipeline's unit of
    collection, e.g. "whole rollouts of 2048 env steps"), else None. `ended_by`: the reason
    the run was asked to end with (`task.end_run(reason)`: a signal, a tune pruner), else None."""
    best_value = _finite(max(best, default=float("-inf")))
    stop_value = cfg.get("env", {}).get("stop_value")
    env_step, budget = getattr(ctx, "env_step", None), cfg.get("max_env_step")
    note = (f"rounded up to {env_step} env steps: {budget_rule}"
            if env_step is not None and budget is not None and env_step > budget else None)
    return dict(eval_value=_finite(ctx.last_eval_value), best_eval_value=best_value,
                final_eval_iter=int(ctx.last_eval_iter),
                solved=bool(stop_value is not None and best_value is not None
                            and best_value >= float(stop_value)),
                stop_value=stop_value, env_step=getattr(ctx, "env_step", None),
                train_iter=ctx.train_iter, train_epoch=getattr(ctx, "train_epoch", None),
                max_env_step=cfg.get("max_env_step"), max_train_iter=cfg.get("max_train_iter"),
                max_wall_time=cfg.get("max_wall_time"), budget_note=note, ended_by=ended_by,
                wall_time=time.perf_counter() - start, run_dir=cfg.run_dir, profile=profile)


def json_summary(result: Dict[str, Any]) -> Dict[str, Any]:
    """The JSON line's fields of a summary: non-finite numbers become None (strict JSON)."""
    out: Dict[str, Any] = {}
    for key in JSON_KEYS:
        value = result.get(key)
        if isinstance(value, float) and not math.isfinite(value):
            value = None
        out[key] = value
    return out


def _ret(value: Optional[float]) -> str:
    return "none" if value is None else f"{value:.2f}"


def _eval_label(result: Dict[str, Any]) -> str:
    """"final eval" unless the last evaluation is of earlier weights than the run ended with
    (a run stopped by SIGTERM is not evaluated at its end)."""
    last, end = result.get("final_eval_iter"), result.get("train_iter")
    if last is None or end is None or last < 0 or last == end:
        return "final eval"
    return "last eval (not of the final weights)"


def format_summary(result: Dict[str, Any], stopped_by: Optional[str] = None) -> str:
    """The few lines a person reads at the end of `rlpipe train`: why the run ended, final and
    best return, wall time, the per-middleware profile and the `rlpipe eval` command.
    `stopped_by`: the signal that stopped it; else the reason it was ended with (`ended_by`)."""
    if stopped_by:
        why = f"stopped by {stopped_by}"
    elif result.get("ended_by"):
        why = result["ended_by"]
    elif result.get("solved"):
        why = f"solved: best eval return reached stop_value {result.get('stop_value')}"
    else:
        limits = [f"{name}={result[name]}" for name in ("max_env_step", "max_train_iter",
                                                       "max_wall_time")
                  if result.get(name) is not None]
        if result.get("budget_note"):
            limits.append(result["budget_note"])
        why = "budget reached" + (f" ({', '.join(limits)})" if limits else "")
    counted = (f"env steps {result.get('env_step')}, " if result.get("env_step") is not None
               else "")
    lines = [f"run ended: {why}",
             f"{counted}train iterations {result.get('train_iter')}, "
             f"wall time {result.get('wall_time', 0.0):.1f} s",
             f"{_eval_label(result)} return {_ret(_finite(result.get('eval_value')))} "
             f"(at train_iter {result.get('final_eval_iter')}), "
             f"best {_ret(_finite(result.get('best_eval_value')))}"]
    if result.get("restarted"):  # processes of a distributed run that died and were restarted
        lines.append("restarted: " + ", ".join(f"{name} {n}x" for name, n in
                                               sorted(result["restarted"].items())))
    if result.get("lost"):  # collectors whose node went (or that were silent) mid-run
        back = [who for who in result["lost"] if who in result.get("back", ())]
        lines.append(f"lost: {', '.join(result['lost'])}"
                     + (f" (back: {', '.join(back)})" if back else " (not back)"))
    profile = result.get("profile")
    if profile is not None:
        lines += ["profile:", *("  " + row for row in str(profile).splitlines())]
    if result.get("run_dir"):
        lines += [f"run folder: {result['run_dir']}",
                  f"evaluate it: rlpipe eval {result['run_dir']}"]
    return "\n".join(lines)
