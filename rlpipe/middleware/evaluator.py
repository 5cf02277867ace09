"""Evaluation by interaction: run the eval policy for whole episodes, report the mean return."""
from __future__ import annotations

import logging
from typing import Any, Callable, List

import numpy as np

from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import Role, contract, current_task

from ._cfg import setting

log = logging.getLogger(__name__)


def evaluate_episodes(policy: Any, env: Any, n_episode: int) -> List[dict]:
    """Run `n_episode` episodes, spread evenly over the envs of `env` (so short episodes are
    not over-represented), and return their {'return', 'length'} records."""
    n_envs = env.n_envs
    quota = np.full(n_envs, n_episode // n_envs)
    quota[: n_episode % n_envs] += 1
    done_count = np.zeros(n_envs, dtype=int)
    records: List[dict] = []
    obs = env.reset()
    while (done_count < quota).any():
        result = env.step(policy.forward(obs)["action"])
        for ep in result.episodes:
            i = ep["env_id"]
            if done_count[i] < quota[i]:
                records.append({"return": float(ep["return"]), "length": int(ep["length"])})
                done_count[i] += 1
        obs = result.obs
    return records


def interaction_evaluator(cfg: Any, policy: Any, env: Any, render: bool = False) -> Callable:
    """Every `cfg.policy.eval.evaluator.eval_freq` train iterations (and at the first and
    last iteration), evaluate `n_episode` episodes with `policy` (an eval face); set
    `ctx.eval_value`; finish the run when it reaches `cfg.env.stop_value`."""
    eval_freq = int(setting(cfg, "policy.eval.evaluator.eval_freq"))
    n_episode = int(setting(cfg, "policy.eval.evaluator.n_episode",
                            setting(cfg, "env.n_evaluator_episode", 10)))
    stop_value = setting(cfg, "env.stop_value", None)
    if n_episode <= 0:
        raise ValueError(f"policy.eval.evaluator.n_episode must be positive, got {n_episode}")

    @contract(
        reads=("train_iter", "last_eval_iter"),
        writes=("eval_value", "eval_output", "last_eval_iter", "last_eval_value"),
        role=Role.EVALUATOR, emits=("eval_end",), finishes=stop_value is not None,
        optional_reads=("env_step",),
    )
    def _evaluator(ctx: OnlineRLContext) -> None:
        task = current_task()
        due = ctx.last_eval_iter < 0 or ctx.train_iter - ctx.last_eval_iter >= eval_freq
        if ctx.last_eval_iter == ctx.train_iter or not (due or task.finish):
            return
        records = evaluate_episodes(policy, env, n_episode)
        returns = np.array([r["return"] for r in records])
        ctx.eval_value = float(returns.mean())
        ctx.eval_output = {"returns": returns.tolist(),
                           "lengths": [r["length"] for r in records]}
        ctx.last_eval_iter = ctx.train_iter
        ctx.last_eval_value = ctx.eval_value
        log.info("eval at train_iter %d, env_step %d: mean return %.2f (std %.2f, %d episodes)",
                 ctx.train_iter, getattr(ctx, "env_step", -1), ctx.eval_value, returns.std(), len(returns))
        task.emit("eval_end", ctx)
        if stop_value is not None and ctx.eval_value >= float(stop_value):
            log.info("eval return %.2f reached stop_value %s: finishing", ctx.eval_value,
                     stop_value)
            task.finish = True

    return _evaluator
