"""Finding zoo entries by name, checking their optional dependencies, and training one."""
from __future__ import annotations

import dataclasses
import difflib
import importlib
import importlib.util
import logging
import os
from types import ModuleType
from typing import Any, Dict, Iterable, List, Mapping, Optional

from easydict import EasyDict

from rlpipe.config import apply_overrides

ENTRIES: Dict[str, str] = {
    "cartpole-dqn": "rlpipe.zoo.cartpole.dqn",
    "acrobot-dqn": "rlpipe.zoo.acrobot.dqn",
    "lunarlander-dqn": "rlpipe.zoo.lunarlander.dqn",
    "pong-dqn": "rlpipe.zoo.pong.dqn",
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

        cfg = resolve_config(self.policy_cls, self.config, user)
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


def train(name: str, seed: int = 0, overrides: Iterable[str] = (), run_dir: Optional[str] = None,
          async_mode: bool = False, max_env_step: Optional[int] = None,
          progress: bool = True, runs_root: str = "runs") -> Dict[str, Any]:
    """Train zoo entry `name` (the scripting form of `rlpipe train`); returns its summary."""
    from ._run import attach_log_file, new_run_dir, write_config

    entry = get_entry(name)
    entry.check_requirements()
    user: Dict[str, Any] = {"seed": seed, "async_mode": async_mode, "progress": progress}
    if max_env_step is not None:
        user["max_env_step"] = max_env_step
    cfg = entry.resolve(user, overrides)
    cfg.run_dir = run_dir or new_run_dir(name, runs_root)
    os.makedirs(cfg.run_dir, exist_ok=True)
    write_config(cfg.run_dir, name, cfg)
    handler = attach_log_file(cfg.run_dir)
    try:
        logging.getLogger("rlpipe").info("training %s in %s", name, cfg.run_dir)
        return entry.main(cfg)
    finally:
        logging.getLogger("rlpipe").removeHandler(handler)
        handler.close()
