"""Running a `Job` (what a run trains): in this process, or as a distributed run, one pipeline
in a learner and N collector processes (Ray actors, or child processes with the local backend)
and an evaluator process if asked, or as the learner of a hub served on a Ray cluster
(`run_trainer`; its collectors join through `rlpipe worker`, remote.py). `run_job` picks one.

The driver (the `rlpipe train` process) ships the `Job`, pickled by reference, and the
resolved config as plain dicts (EasyDict does not survive pickling intact); `role_main`
rebuilds the config in each process and runs the job on it. Collectors and the
evaluator write nothing to the run folder: each gets its own seed, no run_dir, no progress bar;
the learner writes the log, metrics and checkpoints as a single process does. In a Ray run the
driver draws the progress bar and prints the learner's log lines through it (`DriverProgress`
polls the learner's `report_progress` through the hub); with the local backend the learner
runs in the driver and draws its bar itself.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import logging
import os
import sys
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from easydict import EasyDict

from rlpipe.config import to_plain
from rlpipe.engine import Role
from rlpipe.engine import parallel
from rlpipe.middleware.exchange import EVALUATOR_EXITS
from rlpipe.middleware.progress import DriverProgress, ProgressReporter

log = logging.getLogger("rlpipe")
COLLECTOR_SEED_STEP = 7_919  # collector i acts with seed + (i + 1) * step (+ a restart term)
RESTART_SEED_STEP = 104_729
EVALUATOR_SEED = 1_000_003
LOCAL_CHILD_NICE = 10  # collectors and evaluator of a local run yield the CPU to the learner


def reference(obj: Any, what: str) -> str:
    """`obj` (a module-level function or class) as "module:qualname", the form a process
    imports it back from; anything else (a lambda, a nested function, a partial) is refused."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not module or not qualname or "<" in qualname or module == "__main__":
        raise TypeError(f"{what} {obj!r} cannot be handed to the processes of a distributed run: "
                        f"make it a function or class at the top level of an importable module")
    return f"{module}:{qualname}"


def load(ref: str) -> Any:
    """What reference "module:qualname" names, its module imported (the current folder is on
    the import path, as for `--import`)."""
    module, _, qualname = ref.partition(":")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        found: Any = importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"distributed run: cannot import {module!r} for {ref!r} in this "
                          f"process ({exc}); it must be importable on every node") from exc
    for part in qualname.split("."):
        if not hasattr(found, part):
            raise AttributeError(f"distributed run: {ref!r} names no attribute {part!r}; "
                                 f"name a module-level function or class")
        found = getattr(found, part)
    return found


@dataclasses.dataclass(frozen=True)
class Job:
    """What a run trains: `runner(cfg, policy_cls)` (a pipeline function such as
    `run_offpolicy`) or `main(cfg)`, after `prepare(cfg)` when given; `requires` are the
    optional packages each process needs (import name -> rlpipe extra). It runs in this process
    (`run`), or pickles to the processes of a distributed run: by reference ("module:qualname"),
    so that each process imports the functions and the class back (`load`)."""

    name: str
    policy_cls: type
    runner: Optional[Callable[..., Any]] = None
    main: Optional[Callable[..., Any]] = None
    prepare: Optional[Callable[..., Any]] = None
    requires: Tuple[Tuple[str, str], ...] = ()

    @classmethod
    def of(cls, name: str, policy_cls: type, runner: Optional[Callable[..., Any]] = None,
           main: Optional[Callable[..., Any]] = None,
           prepare: Optional[Callable[..., Any]] = None,
           requires: Mapping[str, str] = {}) -> "Job":
        if (runner is None) == (main is None):
            raise TypeError(f"Job {name!r}: give it either runner= (a pipeline function such "
                            f"as run_offpolicy) or main=, not {'both' if runner else 'neither'}")
        return cls(name, policy_cls, runner, main, prepare, tuple(sorted(requires.items())))

    def references(self) -> Tuple[str, ...]:
        """The policy class, runner, main and prepare as "module:qualname" ("" where unset);
        what cannot be imported back in another process is refused here."""
        return (reference(self.policy_cls, f"{self.name}: policy class"),
                *(reference(f, f"{self.name}: {what}") if f is not None else ""
                  for f, what in ((self.runner, "pipeline function"), (self.main, "main"),
                                  (self.prepare, "prepare"))))

    def __reduce__(self) -> Tuple[Any, ...]:
        return _job_from_references, (self.name, *self.references(), self.requires)

    def run(self, cfg: Any) -> Dict[str, Any]:
        """Train on `cfg` in this process; returns the run's summary."""
        for module_name, extra in self.requires:
            if importlib.util.find_spec(module_name) is None:
                raise ImportError(f"{self.name} needs the optional package {module_name!r} in "
                                  f"every process of the run; install it with: pip install "
                                  f"\"rlpipe[{extra}]\"")
        if self.prepare is not None:
            self.prepare(cfg)
        if self.main is not None:
            return self.main(cfg)
        return self.runner(cfg, self.policy_cls)


def _job_from_references(name: str, policy: str, runner: str, main: str, prepare: str,
                         requires: Tuple[Tuple[str, str], ...]) -> Job:
    """A `Job` unpickled in another process: its functions and class imported back."""
    return Job(name, load(policy), *(load(ref) if ref else None for ref in (runner, main, prepare)),
               requires=requires)


def role_seed(seed: int, link: Any) -> int:
    """The seed of this process: the run's seed on the learner, distinct ones elsewhere."""
    if link.role is Role.LEARNER:
        return seed
    base = EVALUATOR_SEED if link.role is Role.EVALUATOR else (link.index + 1) * COLLECTOR_SEED_STEP
    return seed + base + link.attempt * RESTART_SEED_STEP


def role_main(job: Job, plain_cfg: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """What every actor runs: `job` on the rebuilt config, set for its role. Returns the
    learner's summary (with `collectors` and `collector_restarts`), else None."""
    from rlpipe.runs.create import attach_log_file

    link = parallel.link()
    if link is None:
        raise RuntimeError("role_main runs inside actors started by rlpipe.engine.parallel.launch")
    cfg = EasyDict(plain_cfg)
    learner = link.role is Role.LEARNER
    cfg.seed = role_seed(cfg.seed, link)
    if not learner:
        cfg.run_dir, cfg.resume_from, cfg.progress = None, None, False
        # the learner prints and logs the run (the evaluator's results with it); a child of a
        # local run inherits the console and log.txt handlers, so only its warnings go there
        logging.getLogger("rlpipe").setLevel(logging.WARNING)
    if learner and cfg.run_dir:
        os.makedirs(cfg.run_dir, exist_ok=True)
    handler = attach_log_file(cfg.run_dir) if learner and cfg.run_dir else None
    reporter = None
    if learner and not _has_console(logging.getLogger("rlpipe")):
        # a Ray actor: its log lines and progress go to the driver, which prints them through
        # its bar (run_distributed); the tail uses report_progress instead of a bar here
        reporter = ProgressReporter(link)
        logging.getLogger("rlpipe").addHandler(reporter)
    try:
        if link.attempt:
            log.warning("%s restarted (attempt %d)", link.name, link.attempt)
        result = job.run(cfg)
        if link.role is Role.EVALUATOR:  # a learner waiting for a final evaluation stops waiting
            link.add({EVALUATOR_EXITS: 1})
        if learner:
            state = link.state()
            result["collectors"] = link.collectors
            result["collector_restarts"] = int(state["restarts"])
            result["restarted"] = dict(state["restarted"])  # by process: "evaluator", ...
            result["lost"], result["lost_workers"] = list(state["lost"]), len(state["lost"])
            result["back"] = [who for who in state["lost"] if who not in state["away"]]
            if link.collectors and len(state["away"]) >= link.collectors:
                result["ended_by"] = f"every collector lost ({', '.join(state['away'])})" + (
                    f"; resume with `rlpipe train --resume {cfg.run_dir}`" if cfg.run_dir else "")
            if state["restarts"]:
                log.warning("process restarts in this run: %d (%s)", state["restarts"],
                            ", ".join(f"{k}: {v}" for k, v in sorted(state["restarted"].items())))
    finally:
        if reporter is not None:
            _last_report(reporter)
        for added in (handler, reporter):
            if added is not None:
                logging.getLogger("rlpipe").removeHandler(added)
                added.close()
    return result if learner else None


def _last_report(reporter: ProgressReporter) -> None:
    """Send the driver the learner's lines logged since its last report (e.g. the restarts)."""
    try:
        reporter.report(force=True)
    except Exception as err:  # e.g. the hub is gone: the lines are in log.txt all the same
        log.warning("could not send the learner's last log lines to the driver: %r", err)


def _has_console(logger: logging.Logger) -> bool:
    """Whether a record of `logger` reaches a console handler (not a file) of this process."""
    current: Optional[logging.Logger] = logger
    while current is not None:
        if any(isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
               for h in current.handlers):
            return True
        if not current.propagate:
            return False
        current = current.parent
    return False


def _backend_options(par: Any) -> Dict[str, Any]:
    backend = par.get("backend", "ray")
    if backend == "local":  # a learner-bound run: the learner keeps its CPU (docs/concepts.md)
        nice = par.get("child_nice")  # a real-time collector keeps its priority (0)
        return {"backend": backend, "child_nice": LOCAL_CHILD_NICE if nice is None else nice,
                "resources": par.get("resources")}
    return {"backend": backend, "resources": par.get("resources")}


def run_distributed(job: Job, cfg: Any, address: Optional[str] = None,
                    init_options: Optional[Dict[str, Any]] = None,
                    main: Callable[..., Any] = role_main) -> Dict[str, Any]:
    """Train `job` with `cfg.parallel.collectors` collector actors (and an evaluator actor when
    `cfg.parallel.evaluator`); returns the learner's summary. `main(job, plain_cfg)` is what
    each actor runs (`role_main`, or a wrapper of it)."""
    par = cfg.parallel
    log.info("distributed run: 1 learner, %d collectors%s", par.collectors,
             ", 1 evaluator" if par.evaluator else "")
    options = _backend_options(par)
    progress = None
    if options["backend"] == "ray":  # the learner is an actor without a terminal: draw it here
        progress = DriverProgress(cfg.get("max_env_step"), cfg.get("exp_name"),
                                  show_bar=bool(cfg.get("progress", True)))
        options["on_poll"] = progress
    try:
        return parallel.launch(main, collectors=int(par.collectors),
                               evaluator=bool(par.evaluator), address=address,
                               args=(job, to_plain(cfg)), queue_size=par.queue_size,
                               init_options=init_options, **options)
    except parallel.LearnerDiedError as err:
        hint = (f"; continue from its last checkpoint with `rlpipe train --resume {cfg.run_dir}`"
                if cfg.run_dir else "")
        raise parallel.LearnerDiedError(f"{err}{hint}") from None
    finally:
        if progress is not None:
            progress.close()


def run_trainer(job: Job, cfg: Any, address: Optional[str], hub: str) -> Dict[str, Any]:
    """The learner of `job` on served hub `hub` (what `train(..., hub=...)` runs); the hub
    hands the job and config to the workers that join."""
    plain = to_plain(cfg)
    log.info("trainer of hub %r on %s: waiting for workers (`rlpipe worker %s --address %s`)",
             hub, address or "auto", hub, address or "auto")
    with parallel.trainer_link(hub, address, (job, plain)) as learner:
        result = role_main(job, plain)
        state = learner.state()
    result = dict(result or {})
    result["collectors"] = int(state["joined"])
    result["lost_workers"] = len(state["lost"])
    return result


def run_job(job: Job, cfg: Any, address: Optional[str] = None,
            hub: Optional[str] = None) -> Dict[str, Any]:
    """Train `job` on the resolved `cfg` as it asks: in this process; as the learner of a
    distributed run when `cfg.parallel` asks for collectors or an evaluator process (an offline
    run's `--async`: an evaluator and no collector); or, with `hub`, as the learner of that
    served hub (`run_trainer`). Returns the run's summary."""
    par = cfg.get("parallel", {})
    distributed = par.get("collectors", 0) > 0 or par.get("evaluator")
    if not hub and not distributed:
        return job.run(cfg)
    if hub:
        return run_trainer(job, cfg, address, hub)
    return run_distributed(job, cfg, address)
