"""Training zoo entries: `train` (a new run folder) and `resume` (a run folder's newest
resumable checkpoint), with a graceful stop on SIGINT/SIGTERM (`Interrupted`); the scripting
form of `rlpipe train`, also reachable as `rlpipe.train` and `rlpipe.resume`.

Each reads in one direction: the entry and its config from the registry
(`rlpipe/zoo/registry.py`), then `launch` (launch.py), which makes the run folder and runs the
entry's job in this process or distributed (`rlpipe/pipelines/distributed.py`)."""
from __future__ import annotations

import logging
import os
import warnings
from typing import Any, Dict, Iterable, Optional

from rlpipe.config_checks import budget_warnings
from rlpipe.runs import holds_run_lock
from rlpipe.runs.folder_errors import run_folder_errors
from rlpipe.zoo.registry import find_entry, get_entry

from .launch import launch
from .stop import Interrupted

__all__ = ["Interrupted", "resume", "train"]


def _check_collectors(collectors: Any) -> None:
    if isinstance(collectors, bool) or not isinstance(collectors, int) or collectors < 0:
        raise ValueError(f"--collectors must be a whole number >= 0, got {collectors!r}")


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
    _check_collectors(collectors)
    if (init_from_optim or trust) and init_from is None:
        flag = "--init-from-optim" if init_from_optim else "--trust-run-dir"
        raise ValueError(f"{flag} goes with --init-from RUN_DIR (or --resume RUN_DIR)")
    if (backend is not None and not collectors and not async_mode) or (evaluator and not collectors):
        flag = "--evaluator" if evaluator else "--backend"
        raise ValueError(f"{flag} only applies to a distributed run: add --collectors N")
    if hub and (collectors or async_mode or backend is not None or evaluator):
        raise ValueError("rlpipe trainer takes its collectors from `rlpipe worker`: drop "
                         "--collectors, --async, --backend and --evaluator")
    overrides = list(overrides)
    # what to train, and its config for this run: all from the registry
    entry = find_entry(name, algo, env, imports, dataset)
    entry.check_requirements()
    user: Dict[str, Any] = {"seed": seed, "async_mode": async_mode, "progress": progress}
    if max_env_step is not None:
        if entry.pipeline == "offline":
            raise ValueError(f"{entry.name} trains offline: it takes no env steps; set its "
                             f"budget with --set max_train_iter=N")
        user["max_env_step"] = max_env_step
    if init_from is not None:
        user.update(entry.init_from_settings(init_from, init_from_optim))
    if entry.pipeline == "offline" and (collectors or hub or evaluator):
        raise ValueError(f"{entry.name} trains from a data set: it has no collectors; --async "
                         f"runs its evaluation in a process beside the trainer")
    base = entry.resolve(user)
    entry.check_collectors(base, 1 if hub else collectors)
    if hub:
        user["parallel"] = {"collectors": 0, "evaluator": False, "backend": "ray"}
    elif collectors:
        user["parallel"] = {"collectors": collectors, "evaluator": evaluator,
                            "backend": backend or "ray"}
    elif async_mode and entry.pipeline == "offline":  # an evaluator process, no collector
        user["parallel"] = {"collectors": 0, "evaluator": True, "backend": backend or "local"}
    elif async_mode and "parallel" in base and entry.pipeline != "on-policy":
        user["parallel"] = {"collectors": 1, "evaluator": True, "backend": backend or "local"}
    cfg = entry.resolve(user, overrides)
    entry.drop_stale_stop_value(cfg, overrides)
    job = entry.job()
    if cfg.get("init_from"):
        entry.check_init_from(cfg)
    for warning in budget_warnings(cfg):
        logging.getLogger("rlpipe").warning("%s: %s", entry.name, warning)
    cfg.resume_trust = bool(trust)  # for --init-from's checkpoint; not written to config.json
    return launch(job, cfg, run_name=entry.run_name, run_dir=run_dir, runs_root=runs_root,
                  overwrite=overwrite, ray_address=ray_address, hub=hub)


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
        entry.check_collectors(entry.resolve(plain), 1)
        user["parallel"] = {"collectors": 0, "evaluator": False, "backend": "ray"}
    elif collectors is not None or evaluator is not None or backend is not None:
        _check_collectors(collectors or 0)
        entry.check_collectors(entry.resolve(plain), collectors or 0)
        user["parallel"] = {"collectors": recorded.get("collectors", 0) if collectors is None
                            else collectors,
                            "evaluator": recorded.get("evaluator", False) if evaluator is None
                            else evaluator,
                            "backend": recorded.get("backend", "ray") if backend is None
                            else backend}
    cfg = entry.resolve({**plain, **user}, overrides)
    job = entry.job()
    cfg.run_dir = run_dir
    log = logging.getLogger("rlpipe")
    if not has_checkpoint(run_dir):
        log.warning("resume: %s has no checkpoint yet (stopped before its first one): "
                    "restarting it from its config.json", run_dir)
        cfg.resume_from = None
        with run_folder_errors(run_dir, created=False, resuming=True):
            clear_outputs(run_dir)
        return launch(job, cfg, run_name=entry.run_name, run_dir=run_dir, resuming=True,
                      ray_address=ray_address, hub=hub)
    with warnings.catch_warnings():  # refused files are reported once, by prepare_resume
        warnings.simplefilter("ignore")
        chosen = load_checkpoint(run_dir, which="resumable", trust=trust)
    check_budget_left(run_dir, cfg, chosen)  # before prepare_resume cuts the logs back
    with run_folder_errors(run_dir, created=False, resuming=True):
        cfg.resume_from = prepare_resume(run_dir, trust=trust)
        cfg.resume_trust = bool(trust)
        log.info("resuming %s in %s from %s", trained, run_dir, cfg.resume_from)
    return launch(job, cfg, run_name=entry.run_name, run_dir=run_dir, resuming=True,
                  ray_address=ray_address, hub=hub)
