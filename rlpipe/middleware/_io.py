"""Run-folder helpers for middleware: the atomic writes of `rlpipe.runs` (re-exported here so
existing imports keep working) and `resolve_run_dir`, the run-folder lookup of a middleware.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from rlpipe.runs import (PathLike, atomic_write, atomic_write_bytes, atomic_write_json,
                         atomic_write_text, fsync_dir, is_temp_file)

from ._cfg import setting

__all__ = ["PathLike", "atomic_write", "atomic_write_bytes", "atomic_write_json",
           "atomic_write_text", "fsync_dir", "is_temp_file", "resolve_run_dir"]


def resolve_run_dir(cfg: Any, run_dir: Optional[PathLike], who: str) -> Path:
    """The run folder: `run_dir` if given, else `cfg.run_dir`; a clear error when neither is set."""
    chosen = run_dir if run_dir is not None else setting(cfg, "run_dir", None)
    if chosen is None or chosen == "":
        raise ValueError(
            f"{who} needs a run folder to write to, but none was given: pass run_dir='runs/my_run' "
            f"to {who}(...), or set cfg.run_dir (e.g. cfg.run_dir = 'runs/my_run') in the config "
            f"you pass it."
        )
    return Path(chosen)
