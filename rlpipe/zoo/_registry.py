"""Finding zoo entries by name, checking their optional dependencies, and training one."""
from __future__ import annotations

import contextlib
import dataclasses
import difflib
import importlib
import importlib.util
import logging
import os
import signal
import threading
import warnings
from types import ModuleType
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional

from easydict import EasyDict

from rlpipe.config import apply_overrides
from rlpipe.config_checks import check_config

from ._folder_errors import run_folder_errors
from ._generic import build_module, generic_name, is_generic

ENTRIES: Dict[str, str] = {
    "cartpole-dqn": "rlpipe.zoo.cartpole.dqn",
    "acrobot-dqn": "rlpipe.zoo.acrobot.dqn",
    "lunarlander-dqn": "rlpipe.zoo.lunarlander.dqn",
    "pong-dqn": "rlpipe.zoo.pong.dqn",
    "pendulum-sac": "rlpipe.zoo.pendulum.sac",
    "pendulum-td3": "rlpipe.zoo.pendulum.td3",
    "lunarlandercontinuous-sac": "rlpipe.zoo.lunarlandercontinuous.sac",
    "hopper-sac": "rlpipe.zoo.hopper.sac",
    "cartpole-ppo": "rlpipe.zoo.cartpole.ppo",
    "pendulum-ppo": "rlpipe.zoo.pendulum.ppo",
    "lunarlander-ppo": "rlpipe.zoo.lunarlander.ppo",
}


class MissingDependencyError(ImportError):
    """An optional dependency of a zoo entry is not installed."""


@dataclasses.dataclass
class Entry:
    """A zoo entry: its name, module, config and `main`."""

    name: str
    module: ModuleType

    @property
    def config(self) -> Mapping:
        return self.module.config

    @property
    def policy_cls(self) -> Any:
        return self.module.POLICY

    @property
    def run_name(self) -> str:
        """The folder under runs/ that its runs go to (a generic entry: `<env>-<algo>`)."""
        return getattr(self.module, "RUN_NAME", self.name)

    def resolve(self, user: Optional[Mapping] = None, overrides: Iterable[str] = ()) -> EasyDict:
        """Policy defaults ← entry config ← `user` ← `--set` overrides."""
        from ._offpolicy import resolve_config

        # an entry module may bring its pipeline's own resolve_config (e.g. the on-policy one)
        resolve = getattr(self.module, "resolve_config", resolve_config)
        cfg = resolve(self.policy_cls, self.config, user)
        return check_config(apply_overrides(cfg, list(overrides)))  # --set values in range too

    def check_requirements(self) -> None:
        for module_name, extra in getattr(self.module, "REQUIRES", {}).items():
            if importlib.util.find_spec(module_name) is None:
                raise MissingDependencyError(
                    f"zoo entry {self.name!r} needs the optional package {module_name!r}; "
                    f"install it with: pip install \"rlpipe[{extra}]\""
                )

    def main(self, cfg: Any) -> Dict[str, Any]:
        self.check_requirements()
        return self.module.main(cfg)


def list_entries() -> List[str]:
    return sorted(ENTRIES)


def get_entry(name: str, stop_value: Optional[float] = None, imports: Iterable[str] = ()) -> Entry:
    """The zoo entry called `name`; an unknown name is an error listing close matches.

    A name ``ALGO@ENV`` is a generic entry (see `_generic.py`): the algorithm's defaults on that
    env, with `stop_value` and `imports` (modules imported first) in its config."""
    if is_generic(name):
        return Entry(name, build_module(name, stop_value, imports))
    if name not in ENTRIES:
        close = difflib.get_close_matches(name, list(ENTRIES), n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise KeyError(f"unknown zoo entry {name!r}.{hint} `rlpipe list` shows all "
                       f"entries: {', '.join(list_entries())}")
    return Entry(name, importlib.import_module(ENTRIES[name]))


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
    """First SIGINT/SIGTERM: finish the current iteration (the checkpoint saver writes final.pt,
    envs and threads are closed), then raise `Interrupted`. A second one aborts at once."""
    from rlpipe.engine import task

    received: List[int] = []

    def handle(signum: int, frame: Any) -> None:
        if received:
            raise KeyboardInterrupt
        received.append(signum)
        logging.getLogger("rlpipe").warning(
            "%s: finishing the current iteration and checkpointing (again to abort)",
            signal.Signals(signum).name)
        task.finish = True

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
         fresh: bool = False, created: bool = False) -> Dict[str, Any]:
    """Write config.json and the log, run the entry. A `fresh` run (not a resume) that fails
    before its first iteration leaves no half-made folder (`created`: this call made it);
    a run that fails later records the error in its log.txt."""
    from ._run import attach_log_file, write_config
    from ._run_guard import discard_unstarted, started

    os.makedirs(cfg.run_dir, exist_ok=True)
    write_config(cfg.run_dir, entry.name, cfg)
    handler = attach_log_file(cfg.run_dir)
    logging.getLogger("rlpipe").info("%s: run folder %s", entry.name, cfg.run_dir)
    result: Optional[Dict[str, Any]] = None
    failed, keep = False, True
    try:
        with _graceful_stop():
            if cfg.get("parallel", {}).get("collectors", 0) > 0:
                from ._parallel import run_distributed

                result = run_distributed(entry.name, cfg, ray_address)
            else:
                result = entry.main(cfg)
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


def _drop_stale_stop_value(entry: Entry, cfg: Any, overrides: Iterable[str]) -> None:
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
          overwrite: bool = False) -> Dict[str, Any]:
    """Train zoo entry `name` (the scripting form of `rlpipe train`); returns its summary.

    Instead of `name`, `algo` and `env` train any trainable policy (a registered name such as
    "ppo", or "module:Class") on any env (a gymnasium id, a name registered with
    `rlpipe.envs.register_env`, or "module:factory") with the algorithm's defaults, in
    `runs/<env>-<algo>/<timestamp>/`; `imports` are modules imported first.
    `run_dir`: a new or empty folder; one that holds files is refused unless `overwrite`.
    `async_mode`: collection and evaluation overlap training. An off-policy entry (DQN, SAC,
    TD3) then collects in one child process and evaluates in another, beside the learner in
    this one (a local distributed run, no Ray needed: one Python process cannot overlap them,
    as small torch models keep the GIL busy); an on-policy entry runs its middleware in threads.
    `collectors` > 0: a distributed run (one learner, that many collector processes, an
    evaluator process with `evaluator`) on Ray (`backend="ray"`, the default; `ray_address`
    names a cluster, default a local Ray) or in child processes (`backend="local"`)."""
    from ._parallel import check_distributed
    from ._run import new_run_dir
    from ._run_guard import claim_run_dir

    entry = _entry_to_train(name, algo, env, list(imports))
    name = entry.name
    entry.check_requirements()
    if (backend is not None and not collectors and not async_mode) or (evaluator and not collectors):
        flag = "--evaluator" if evaluator else "--backend"
        raise ValueError(f"{flag} only applies to a distributed run: add --collectors N")
    user: Dict[str, Any] = {"seed": seed, "async_mode": async_mode, "progress": progress}
    if max_env_step is not None:
        user["max_env_step"] = max_env_step
    base = entry.resolve(user)
    check_distributed(name, base, collectors)
    if collectors:
        user["parallel"] = {"collectors": collectors, "evaluator": evaluator,
                            "backend": backend or "ray"}
    elif async_mode and "parallel" in base:
        user["parallel"] = {"collectors": 1, "evaluator": True, "backend": backend or "local"}
    overrides = list(overrides)
    cfg = entry.resolve(user, overrides)
    _drop_stale_stop_value(entry, cfg, overrides)
    check_distributed(name, cfg, cfg.get("parallel", {}).get("collectors", 0))
    created = True
    with run_folder_errors(run_dir or os.path.join(runs_root, entry.run_name), created=False):
        if run_dir:
            created = claim_run_dir(run_dir, overwrite)
        cfg.run_dir = run_dir or new_run_dir(entry.run_name, runs_root)
    logging.getLogger("rlpipe").info("training %s in %s", name, cfg.run_dir)
    with run_folder_errors(cfg.run_dir, created=created):  # one line for an unwritable folder
        return _run(entry, cfg, ray_address, fresh=True, created=created)


def _entry_to_train(name: Optional[str], algo: Optional[str], env: Optional[str],
                    imports: List[str]) -> Entry:
    if algo is None and env is None:
        if not name:
            raise ValueError("name a zoo entry (`rlpipe train cartpole-dqn`; `rlpipe list` shows "
                             "them), or an algorithm and an env (`--algo ppo --env CartPole-v1`)")
        if imports:
            raise ValueError("--import applies to --algo/--env runs; a zoo entry imports what it "
                             "needs itself")
        return get_entry(name)
    if name:
        raise ValueError(f"give a zoo entry ({name!r}) or --algo/--env, not both; to change the "
                         f"entry's env use --set env.id=ID")
    if not algo or not env:
        missing = "--env" if algo else "--algo"
        raise ValueError(f"{missing} is missing: --algo and --env go together (e.g. "
                         f"`rlpipe train --algo ppo --env CartPole-v1`)")
    generic, stop_value = generic_name(algo, env, imports)
    return get_entry(generic, stop_value, imports)


def resume(run_dir: str, name: Optional[str] = None, overrides: Iterable[str] = (),
           max_env_step: Optional[int] = None, progress: bool = True,
           collectors: Optional[int] = None, evaluator: Optional[bool] = None,
           ray_address: Optional[str] = None, backend: Optional[str] = None,
           trust: bool = False) -> Dict[str, Any]:
    """Continue the run in `run_dir` from its newest resumable checkpoint (`rlpipe train
    --resume RUN_DIR`): weights, optimiser, counters, exploration, RNGs, envs and buffer.
    A run killed before its first checkpoint restarts from its saved config.
    A distributed run resumes with its collectors unless `collectors` says otherwise.
    `trust` (`--trust-run-dir`): resume from checkpoints not signed by this user (another
    machine's, or written before manifests); their files must still match their manifests."""
    from rlpipe.middleware import load_checkpoint

    from ._parallel import check_distributed
    from ._resume import prepare_resume
    from ._resume_checks import check_budget_left, check_resume_overrides
    from ._run import read_config
    from ._run_guard import clear_outputs, has_checkpoint

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
    if collectors is not None or evaluator is not None or backend is not None:
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
        clear_outputs(run_dir)
        cfg.resume_from = None
        with run_folder_errors(run_dir, created=False):
            return _run(entry, cfg, ray_address)
    with warnings.catch_warnings():  # refused files are reported once, by prepare_resume
        warnings.simplefilter("ignore")
        chosen = load_checkpoint(run_dir, which="resumable", trust=trust)
    check_budget_left(run_dir, cfg, chosen)  # before prepare_resume cuts the logs back
    cfg.resume_from = prepare_resume(run_dir, trust=trust)
    cfg.resume_trust = bool(trust)
    log.info("resuming %s in %s from %s", trained, run_dir, cfg.resume_from)
    with run_folder_errors(run_dir, created=False):
        return _run(entry, cfg, ray_address)
