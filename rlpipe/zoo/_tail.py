"""The end of every zoo pipeline: when to stop, what to record, and the run's summary."""
from __future__ import annotations

import time
from typing import Any, Dict, List

from rlpipe.middleware import CkptSaver, online_logger, progress_bar, termination_checker


def use_run_tail(task: Any, cfg: Any, policy: Any, run_state: Any) -> None:
    """termination_checker, then (with a run folder) logger and checkpoints, then the bar."""
    task.use(termination_checker(max_env_step=cfg.max_env_step,
                                 max_train_iter=cfg.max_train_iter,
                                 max_wall_time=cfg.max_wall_time))
    if cfg.run_dir:
        task.use(online_logger(cfg, tensorboard=cfg.logger.tensorboard))
        task.use(CkptSaver(cfg, policy, train_freq=cfg.ckpt.train_freq, resume_state=run_state))
    if cfg.progress:
        task.use(progress_bar(cfg, total_env_steps=cfg.max_env_step))


def summary(cfg: Any, ctx: Any, best: List[float], start: float, profile: Any) -> Dict[str, Any]:
    """What `train()` returns: last and best evaluation, counters, wall time, profile."""
    return dict(eval_value=ctx.last_eval_value, best_eval_value=max(best, default=float("-inf")),
                env_step=ctx.env_step, train_iter=ctx.train_iter,
                wall_time=time.perf_counter() - start, run_dir=cfg.run_dir, profile=profile)
