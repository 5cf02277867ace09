"""Running a resolved training: its run folder from first file to last line, around the `Job`.

`launch` makes or claims the folder (a new run), writes config.json and attaches log.txt, runs
the job (in this process, distributed or as a hub's learner: `run_job`) under a graceful stop on
SIGINT/SIGTERM, and on failure records the error in the log, or, for a new run that failed
or was interrupted before its first iteration, leaves no half-made folder."""
from __future__ import annotations

import contextlib
import logging
import os
from typing import Any, Dict, Optional

from rlpipe.pipelines.distributed import Job, run_job
from rlpipe.runs import RunLock, check_unlocked
from rlpipe.runs.create import new_run_dir
from rlpipe.runs.folder_errors import run_folder_errors
from rlpipe.runs.guard import claim_run_dir, discard_unstarted, started

from .stop import Interrupted, graceful_stop

log = logging.getLogger("rlpipe")


def launch(job: Job, cfg: Any, *, run_name: str, run_dir: Optional[str] = None,
           runs_root: str = "runs", overwrite: bool = False, resuming: bool = False,
           ray_address: Optional[str] = None, hub: Optional[str] = None) -> Dict[str, Any]:
    """Train `job` on the resolved `cfg`; returns the run's summary.

    A new run goes to `run_dir` (new or empty; one that holds files is refused unless
    `overwrite`) or to a new `runs_root/run_name/<timestamp>/`, under a lock that keeps
    every other writer out; `resuming`: `run_dir` is the run's own folder, already locked by
    its caller. `ray_address` and `hub`: where a distributed run's learner attaches."""
    created = False
    if not resuming:
        with run_folder_errors(run_dir or os.path.join(runs_root, run_name), created=False):
            if run_dir:
                check_unlocked(run_dir)  # a folder being written: refused, naming its writer
                created = claim_run_dir(run_dir, overwrite)
            else:
                run_dir, created = new_run_dir(run_name, runs_root), True
        log.info("training %s in %s", job.name, run_dir)
    cfg.run_dir = run_dir
    lock = contextlib.nullcontext() if resuming else RunLock(run_dir)  # one writer per folder
    with run_folder_errors(run_dir, created=created, resuming=resuming), lock:
        return _write_and_run(job, cfg, ray_address, hub, fresh=not resuming, created=created)


def _write_and_run(job: Job, cfg: Any, ray_address: Optional[str], hub: Optional[str],
                   fresh: bool, created: bool) -> Dict[str, Any]:
    """config.json and log.txt, then the job. A `fresh` run (not a resume) that fails, or is
    stopped by a Ctrl-C that comes before the graceful stop is in place, before its first
    iteration leaves no half-made folder (`created`: this run made it); a run that fails
    later records the error in its log.txt."""
    # imported at call time: the tests stand a full or read-only disk in for these two
    from rlpipe.runs.create import attach_log_file, write_config

    os.makedirs(cfg.run_dir, exist_ok=True)
    result: Optional[Dict[str, Any]] = None
    handler, logging_to_folder = None, False
    failed, keep = False, True
    try:
        write_config(cfg.run_dir, job.name, cfg)
        handler, logging_to_folder = attach_log_file(cfg.run_dir), True
        log.info("%s: run folder %s", job.name, cfg.run_dir)
        with graceful_stop():
            result = run_job(job, cfg, ray_address, hub)
        return result
    except Interrupted as stop:  # the run ended cleanly: its folder and summary go with it
        raise Interrupted(stop.signum, cfg.run_dir, result) from None
    except (Exception, KeyboardInterrupt) as exc:  # Ctrl-C before the graceful stop, or twice
        failed = True
        keep = not fresh or started(cfg.run_dir)
        if keep and logging_to_folder and isinstance(exc, KeyboardInterrupt):
            log.error("the run was aborted by Ctrl-C; --resume goes on from its newest checkpoint")
        elif keep and logging_to_folder:
            log.error("the run failed: %s: %s", type(exc).__name__, exc)
        raise
    finally:
        if handler is not None:
            log.removeHandler(handler)
            handler.close()
        if failed and not keep:
            discard_unstarted(cfg.run_dir, created)
