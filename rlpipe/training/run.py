"""Training zoo entries: `train` (a new run folder) and `resume` (a run folder's newest
resumable checkpoint), with a graceful stop on SIGINT/SIGTERM (`Interrupted`); the scripting
form of `rlpipe train`, also reachable as `rlpipe.train` and `rlpipe.resume`.

The entries themselves are found by `rlpipe/zoo/registry.py`; a distributed run is handed to
`rlpipe/pipelines/distributed.py` (or `remote.py`, on a served hub) with what to run."""
from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import warnings
from typing import Any, Dict, Iterable, Iterator, List, Optional

from rlpipe.config_checks import budget_warnings
from rlpipe.runs import RunLock, check_unlocked, holds_run_lock

from rlpipe.runs.folder_errors import run_folder_errors
from rlpipe.zoo.registry import Entry, _entry_to_train, get_entry


class Interrupted(Exception):
    """The run was stopped by SIGINT/SIGTERM after finishing its iteration and checkpointing.

    `run_dir`: the run's folder (named in the message); `summary`: what the run returned (its
    final evaluation included) when it got that far, else None."""

    def __init__(self, signum: int, run_dir: Optional[str] = None,
                 summary: Optional[Dict[str, Any]] = None) -> None:
        folder = run_dir if run_dir else "RUN_DIR"
        super().__init__(f"stopped by {signal.Signals(signum).name}; the run folder {folder} "
                         f"holds a final checkpoint: continue with "
                         f"`rlpipe train --resume {folder}`")
        self.signum = signum
        self.signal_name = signal.Signals(signum).name
        self.run_dir = run_dir
        self.summary = summary
        self.exit_code = 128 + signum  # 130 for SIGINT, 143 for SIGTERM


@contextlib.contextmanager
def _graceful_stop() -> Iterator[List[int]]:
    """First SIGINT/SIGTERM: end the run after the current iteration with `task.end_run`
    (the checkpoint saver writes final.pt, envs and threads are closed; the summary and log
    name the signal), then raise `Interrupted`. A second one aborts at once."""
    from rlpipe.engine import task

    received: List[int] = []

    def handle(signum: int, frame: Any) -> None:
        if received:
            raise KeyboardInterrupt
        received.append(signum)
        logging.getLogger("rlpipe").warning(
            "%s: finishing the current iteration and checkpointing (again to abort)",
            signal.Signals(signum).name)
        task.end_run(f"stopped by {signal.Signals(signum).name}")

    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = {s: signal.signal(s, handle) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    if received:
        raise Interrupted(received[0])


def _run(entry: Entry, cfg: Any, ray_address: Optional[str] = None,
         fresh: bool = False, created: bool = False, hub: Optional[str] = None) -> Dict[str, Any]:
    """Write config.json and the log, run the entry. A `fresh` run (not a resume) that fails
    before its first iteration leaves no half-made folder (`created`: this call made it);
    a run that fails later records the error in its log.txt."""
    from rlpipe.runs.create import attach_log_file, write_config
    from rlpipe.runs.guard import discard_unstarted, started

    os.makedirs(cfg.run_dir, exist_ok=True)
    write_config(cfg.run_dir, entry.name, cfg)
    handler = attach_log_file(cfg.run_dir)
    logging.getLogger("rlpipe").info("%s: run folder %s", entry.name, cfg.run_dir)
    result: Optional[Dict[str, Any]] = None
    failed, keep = False, True
    try:
        with _graceful_stop():
            if hub:
                from rlpipe.pipelines.remote import run_trainer

                result = run_trainer(entry.job(), cfg, ray_address, hub)
            elif (cfg.get("parallel", {}).get("collectors", 0) > 0
                  or cfg.get("parallel", {}).get("evaluator")):  # offline --async: 0 collectors
                from rlpipe.pipelines.distributed import run_distributed

                result = run_distributed(entry.job(), cfg, ray_address)
            else:
                result = entry.run(cfg)
        return result
    except Interrupted as stop:  # the run ended cleanly: its folder and summary go with it
        raise Interrupted(stop.signum, cfg.run_dir, result) from None
    except Exception as exc:
        failed = True
        keep = not fresh or started(cfg.run_dir)
        if keep:
            logging.getLogger("rlpipe").error("the run failed: %s: %s", type(exc).__name__, exc)
        raise
    finally:
        if handler is not None:
            logging.getLogger("rlpipe").removeHandler(handler)
            handler.close()
        if failed and not keep:
            discard_unstarted(cfg.run_dir, created)


def drop_stale_stop_value(entry: Entry, cfg: Any, overrides: Iterable[str]) -> None:
    """`--set env.id=OTHER` on an entry keeps a stop value tuned for the entry's env: drop it
    (one warning line) unless `--set env.stop_value=...` sets one for the new env."""
    tuned_for = entry.config.get("env", {}).get("id")
    sets_stop = any(o.split("=", 1)[0].strip() == "env.stop_value" for o in overrides)
    if (tuned_for is not None and cfg.env.id != tuned_for and cfg.env.stop_value is not None
            and not sets_stop):
        logging.getLogger("rlpipe").warning(
            "env.id=%s: dropped the stop_value %s that %s tuned for %s (the run uses its whole "
            "budget); set one with --set env.stop_value=V", cfg.env.id, cfg.env.stop_value,
            entry.name, tuned_for)
        cfg.env.stop_value = None


def train(name: Optional[str] = None, seed: int = 0, overrides: Iterable[str] = (),
          run_dir: Optional[str] = None, async_mode: bool = False,
          max_env_step: Optional[int] = None, progress: bool = True, runs_root: str = "runs",
          collectors: int = 0, evaluator: bool = False, ray_address: Optional[str] = None,
          backend: Optional[str] = None, *, algo: Optional[str] = None,
          env: Optional[str] = None, imports: Iterable[str] = (),
          overwrite: bool = False, dataset: Optional[str] = None,
          init_from: Optional[str] = None, init_from_optim: bool = False,
          trust: bool = False, hub: Optional[str] = None) -> Dict[str, Any]:
    """Train zoo entry `name` (the scripting form of `rlpipe train`); returns its summary.

    Instead of `name`, `algo` and `env` train any trainable policy (a registered name such as
    "ppo", or "module:Class") on any env (a gymnasium id, a name registered with
    `rlpipe.envs.register_env`, or "module:factory") with the algorithm's defaults, in
    `runs/<env>-<algo>/<timestamp>/`; `imports` are modules imported first. `algo` and
    `dataset` (a local Minari data set id) train offline on it (`env`, optional: the eval
    env, default the data set's), in `runs/<data set>-<algo>/<timestamp>/`.
    `init_from`: a run folder (its best.pt, else final.pt) or checkpoint whose weights this new
    off-policy or offline run starts from (`init_from_optim`: its optimisers too; `trust`:
    accept a checkpoint not signed by this user), e.g. an offline policy fine-tuned online.
    `run_dir`: a new or empty folder; one that holds files is refused unless `overwrite`.
    `async_mode`: collection and evaluation overlap training. An off-policy entry (DQN, SAC,
    TD3) then collects in one child process and evaluates in another, beside the learner in
    this one (a local distributed run, no Ray needed: one Python process cannot overlap them,
    as small torch models keep the GIL busy); an on-policy entry runs its middleware in threads;
    an offline entry evaluates in a child process while this one trains.
    `collectors` > 0: a distributed run (one learner, that many collector processes, an
    evaluator process with `evaluator`) on Ray (`backend="ray"`, the default; `ray_address`
    names a cluster, default a local Ray) or in child processes (`backend="local"`).
    `hub`: instead, the learner of a training on the hub of that name served on the cluster at
    `ray_address` (`rlpipe serve`), whose collectors `rlpipe worker` adds
    (rlpipe.pipelines.remote)."""
    from rlpipe.pipelines.distributed import check_distributed
    from rlpipe.runs.create import new_run_dir
    from rlpipe.runs.guard import claim_run_dir

    entry = _entry_to_train(name, algo, env, list(imports), dataset)
    name = entry.name
    entry.check_requirements()
    if (init_from_optim or trust) and init_from is None:
        flag = "--init-from-optim" if init_from_optim else "--trust-run-dir"
        raise ValueError(f"{flag} goes with --init-from RUN_DIR (or --resume RUN_DIR)")
    if (backend is not None and not collectors and not async_mode) or (evaluator and not collectors):
        flag = "--evaluator" if evaluator else "--backend"
        raise ValueError(f"{flag} only applies to a distributed run: add --collectors N")
    user: Dict[str, Any] = {"seed": seed, "async_mode": async_mode, "progress": progress}
    if max_env_step is not None:
        if entry.pipeline == "offline":
            raise ValueError(f"{name} trains offline: it takes no env steps; set its budget "
                             f"with --set max_train_iter=N")
        user["max_env_step"] = max_env_step
    if init_from is not None:
        user.update(_init_from_settings(entry, init_from, init_from_optim))
    base = entry.resolve(user)
    if hub and (collectors or async_mode or backend is not None or evaluator):
        raise ValueError("rlpipe trainer takes its collectors from `rlpipe worker`: drop "
                         "--collectors, --async, --backend and --evaluator")
    if entry.pipeline == "offline" and (collectors or hub or evaluator):
        raise ValueError(f"{name} trains from a data set: it has no collectors; --async runs its "
                         f"evaluation in a process beside the trainer")
    check_distributed(name, base, 1 if hub else collectors)
    if hub:
        user["parallel"] = {"collectors": 0, "evaluator": False, "backend": "ray"}
    elif collectors:
        user["parallel"] = {"collectors": collectors, "evaluator": evaluator,
                            "backend": backend or "ray"}
    elif async_mode and entry.pipeline == "offline":  # an evaluator process, no collector
        user["parallel"] = {"collectors": 0, "evaluator": True, "backend": backend or "local"}
    elif async_mode and "parallel" in base and entry.pipeline != "on-policy":
        user["parallel"] = {"collectors": 1, "evaluator": True, "backend": backend or "local"}
    overrides = list(overrides)
    cfg = entry.resolve(user, overrides)
    check_distributed(name, cfg, cfg.get("parallel", {}).get("collectors", 0))
    drop_stale_stop_value(entry, cfg, overrides)
    for warning in budget_warnings(cfg):
        logging.getLogger("rlpipe").warning("%s: %s", name, warning)
    if cfg.get("init_from"):
        _check_init_from(entry, cfg)
    created = True
    with run_folder_errors(run_dir or os.path.join(runs_root, entry.run_name), created=False):
        if run_dir:
            check_unlocked(run_dir)  # a folder being written: refused, naming its writer's pid
            created = claim_run_dir(run_dir, overwrite)
        cfg.run_dir = run_dir or new_run_dir(entry.run_name, runs_root)
    cfg.resume_trust = bool(trust)  # for --init-from's checkpoint; not written to config.json
    logging.getLogger("rlpipe").info("training %s in %s", name, cfg.run_dir)
    with run_folder_errors(cfg.run_dir, created=created):  # one line for an unwritable folder
        with RunLock(cfg.run_dir):  # one writer per run folder
            return _run(entry, cfg, ray_address, fresh=True, created=created, hub=hub)


def _init_from_settings(entry: Entry, source: str, with_optim: bool) -> Dict[str, Any]:
    """The config of `--init-from SOURCE`: the checkpoint chosen (best.pt, else final.pt)."""
    from rlpipe.pipelines.init_from import pick_checkpoint

    if entry.pipeline == "on-policy":
        raise ValueError(f"--init-from: {entry.name} is on-policy; --init-from starts "
                         f"off-policy and offline runs (e.g. `--algo sac --env Pendulum-v1 "
                         f"--init-from RUN_DIR`)")
    checkpoint = pick_checkpoint(source)
    settings: Dict[str, Any] = {"init_from": checkpoint, "init_from_optim": bool(with_optim)}
    # the weights define the network: a run of the same algorithm takes the source's model
    # section (e.g. an offline run's, whose defaults differ from an online run's)
    from rlpipe.runs import RunDir
    from rlpipe.runs.create import read_config

    source_name, plain = read_config(str(RunDir.of_checkpoint(checkpoint).root))
    model = (plain.get("policy") or {}).get("model")
    source_cls = get_entry(source_name, imports=plain.get("imports", ())).policy_cls
    if model is not None and source_cls is entry.policy_cls:
        settings["policy"] = {"model": model}
    return settings


def _check_init_from(entry: Entry, cfg: Any) -> None:
    """Before any run folder exists: the source run's policy class and spaces (from its
    config.json) must fit this run's (one line otherwise)."""
    from rlpipe.runs import RunDir

    from rlpipe.zoo.generic import spaces_of
    from rlpipe.pipelines.init_from import check_source
    from rlpipe.runs.create import read_config

    checkpoint = str(cfg.init_from)
    source_name, plain = read_config(str(RunDir.of_checkpoint(checkpoint).root))
    source_cls = get_entry(source_name, imports=plain.get("imports", ())).policy_cls
    check_source(checkpoint, (source_cls, *spaces_of(plain), source_name), entry.policy_cls,
                 *spaces_of(cfg))


@holds_run_lock
def resume(run_dir: str, name: Optional[str] = None, overrides: Iterable[str] = (),
           max_env_step: Optional[int] = None, progress: bool = True,
           collectors: Optional[int] = None, evaluator: Optional[bool] = None,
           ray_address: Optional[str] = None, backend: Optional[str] = None,
           trust: bool = False, hub: Optional[str] = None) -> Dict[str, Any]:
    """Continue the run in `run_dir` from its newest resumable checkpoint (`rlpipe train
    --resume RUN_DIR`): weights, optimiser, counters, exploration, RNGs, envs and buffer.
    A run killed before its first checkpoint restarts from its saved config.
    A distributed run resumes with its collectors unless `collectors` says otherwise.
    `trust` (`--trust-run-dir`): resume from checkpoints not signed by this user (another
    machine's, or written before manifests); their files must still match their manifests.
    `hub` (`rlpipe trainer NAME --resume RUN_DIR`): continue as the learner of that served hub,
    whose collectors `rlpipe worker` adds."""
    from rlpipe.middleware import load_checkpoint
    from rlpipe.pipelines.distributed import check_distributed
    from rlpipe.pipelines.resume import prepare_resume
    from rlpipe.runs.resume_checks import check_budget_left, check_resume_overrides
    from rlpipe.runs.create import read_config
    from rlpipe.runs.guard import clear_outputs, has_checkpoint

    if not os.path.isdir(run_dir):
        raise FileNotFoundError(f"--resume {run_dir!r}: no such run folder; pass the folder that "
                                f"`rlpipe train` printed (runs/<entry>/<timestamp>/)")
    trained, plain = read_config(run_dir)
    if name is not None and name != trained:
        raise ValueError(f"--resume {run_dir!r}: that run trained {trained!r}, not {name!r}; "
                         f"resume it as `rlpipe train --resume {run_dir}` or start a new run")
    overrides = list(overrides)
    check_resume_overrides(run_dir, plain, overrides)
    entry = get_entry(trained, imports=plain.get("imports", ()))
    entry.check_requirements()
    user: Dict[str, Any] = {"progress": progress}
    if max_env_step is not None:
        user["max_env_step"] = max_env_step
    recorded = plain.get("parallel", {})
    if (evaluator or backend is not None) and not (collectors or recorded.get("collectors")):
        flag = "--evaluator" if evaluator else "--backend"
        raise ValueError(f"{flag} only applies to a distributed run: add --collectors N")
    if hub and (collectors or evaluator or backend is not None):
        raise ValueError("rlpipe trainer --resume takes its collectors from `rlpipe worker`: "
                         "drop --collectors, --evaluator and --backend")
    if hub:
        check_distributed(trained, entry.resolve(plain), 1)
        user["parallel"] = {"collectors": 0, "evaluator": False, "backend": "ray"}
    elif collectors is not None or evaluator is not None or backend is not None:
        check_distributed(trained, entry.resolve(plain), collectors or 0)
        user["parallel"] = {"collectors": recorded.get("collectors", 0) if collectors is None
                            else collectors,
                            "evaluator": recorded.get("evaluator", False) if evaluator is None
                            else evaluator,
                            "backend": recorded.get("backend", "ray") if backend is None
                            else backend}
    cfg = entry.resolve({**plain, **user}, overrides)
    check_distributed(trained, cfg, cfg.get("parallel", {}).get("collectors", 0))
    cfg.run_dir = run_dir
    log = logging.getLogger("rlpipe")
    if not has_checkpoint(run_dir):
        log.warning("resume: %s has no checkpoint yet (stopped before its first one): "
                    "restarting it from its config.json", run_dir)
        cfg.resume_from = None
        with run_folder_errors(run_dir, created=False, resuming=True):
            clear_outputs(run_dir)
            return _run(entry, cfg, ray_address, hub=hub)
    with warnings.catch_warnings():  # refused files are reported once, by prepare_resume
        warnings.simplefilter("ignore")
        chosen = load_checkpoint(run_dir, which="resumable", trust=trust)
    check_budget_left(run_dir, cfg, chosen)  # before prepare_resume cuts the logs back
    with run_folder_errors(run_dir, created=False, resuming=True):
        cfg.resume_from = prepare_resume(run_dir, trust=trust)
        cfg.resume_trust = bool(trust)
        log.info("resuming %s in %s from %s", trained, run_dir, cfg.resume_from)
        return _run(entry, cfg, ray_address, hub=hub)
