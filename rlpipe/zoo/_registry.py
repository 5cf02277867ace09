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
from types import ModuleType
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional

from easydict import EasyDict

from rlpipe.config import apply_overrides

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

    def resolve(self, user: Optional[Mapping] = None, overrides: Iterable[str] = ()) -> EasyDict:
        """Policy defaults ← entry config ← `user` ← `--set` overrides."""
        from ._offpolicy import resolve_config

        # an entry module may bring its pipeline's own resolve_config (e.g. the on-policy one)
        resolve = getattr(self.module, "resolve_config", resolve_config)
        cfg = resolve(self.policy_cls, self.config, user)
        return apply_overrides(cfg, list(overrides))

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


def get_entry(name: str) -> Entry:
    """The zoo entry called `name`; an unknown name is an error listing close matches."""
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


def _run(entry: Entry, cfg: Any, ray_address: Optional[str] = None) -> Dict[str, Any]:
    from ._run import attach_log_file, write_config

    os.makedirs(cfg.run_dir, exist_ok=True)
    write_config(cfg.run_dir, entry.name, cfg)
    handler = attach_log_file(cfg.run_dir)
    logging.getLogger("rlpipe").info("%s: run folder %s", entry.name, cfg.run_dir)
    result: Optional[Dict[str, Any]] = None
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
    finally:
        if handler is not None:
            logging.getLogger("rlpipe").removeHandler(handler)
            handler.close()


def train(name: str, seed: int = 0, overrides: Iterable[str] = (), run_dir: Optional[str] = None,
          async_mode: bool = False, max_env_step: Optional[int] = None,
          progress: bool = True, runs_root: str = "runs", collectors: int = 0,
          evaluator: bool = False, ray_address: Optional[str] = None,
          backend: Optional[str] = None) -> Dict[str, Any]:
    """Train zoo entry `name` (the scripting form of `rlpipe train`); returns its summary.

    `async_mode`: collection and evaluation overlap training. An off-policy entry (DQN, SAC,
    TD3) then collects in one child process and evaluates in another, beside the learner in
    this one (a local distributed run, no Ray needed: one Python process cannot overlap them,
    as small torch models keep the GIL busy); an on-policy entry runs its middleware in threads.
    `collectors` > 0: a distributed run (one learner, that many collector processes, an
    evaluator process with `evaluator`) on Ray (`backend="ray"`, the default; `ray_address`
    names a cluster, default a local Ray) or in child processes (`backend="local"`)."""
    from ._parallel import check_distributed
    from ._run import new_run_dir

    entry = get_entry(name)
    entry.check_requirements()
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
    cfg = entry.resolve(user, overrides)
    check_distributed(name, cfg, cfg.get("parallel", {}).get("collectors", 0))
    cfg.run_dir = run_dir or new_run_dir(name, runs_root)
    logging.getLogger("rlpipe").info("training %s in %s", name, cfg.run_dir)
    return _run(entry, cfg, ray_address)


def resume(run_dir: str, name: Optional[str] = None, overrides: Iterable[str] = (),
           max_env_step: Optional[int] = None, progress: bool = True,
           collectors: Optional[int] = None, evaluator: Optional[bool] = None,
           ray_address: Optional[str] = None, backend: Optional[str] = None) -> Dict[str, Any]:
    """Continue the run in `run_dir` from its newest resumable checkpoint (`rlpipe train
    --resume RUN_DIR`): weights, optimiser, counters, exploration, RNGs, envs and buffer.
    A distributed run resumes with its collectors unless `collectors` says otherwise."""
    from rlpipe.middleware import load_checkpoint

    from ._parallel import check_distributed
    from ._run import read_config

    if not os.path.isdir(run_dir):
        raise FileNotFoundError(f"--resume {run_dir!r}: no such run folder; pass the folder that "
                                f"`rlpipe train` printed (runs/<entry>/<timestamp>/)")
    trained, plain = read_config(run_dir)
    if name is not None and name != trained:
        raise ValueError(f"--resume {run_dir!r}: that run trained {trained!r}, not {name!r}; "
                         f"resume it as `rlpipe train --resume {run_dir}` or start a new run")
    entry = get_entry(trained)
    entry.check_requirements()
    user: Dict[str, Any] = {"progress": progress}
    if max_env_step is not None:
        user["max_env_step"] = max_env_step
    if collectors is not None or evaluator is not None or backend is not None:
        check_distributed(trained, entry.resolve(plain), collectors or 0)
        recorded = plain.get("parallel", {})
        user["parallel"] = {"collectors": recorded.get("collectors", 0) if collectors is None
                            else collectors,
                            "evaluator": recorded.get("evaluator", False) if evaluator is None
                            else evaluator,
                            "backend": recorded.get("backend", "ray") if backend is None
                            else backend}
    cfg = entry.resolve({**plain, **user}, overrides)
    check_distributed(trained, cfg, cfg.get("parallel", {}).get("collectors", 0))
    cfg.run_dir = run_dir
    cfg.resume_from = str(load_checkpoint(run_dir, which="resumable")["path"])
    logging.getLogger("rlpipe").info("resuming %s in %s from %s", trained, run_dir,
                                     cfg.resume_from)
    return _run(entry, cfg, ray_address)
