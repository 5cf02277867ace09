"""Run-folder helpers for middleware: the atomic writes of `rlpipe.runs` (re-exported here so
existing imports keep working), `resolve_run_dir`, the run-folder lookup of a middleware, and
`NotWriting`, what a run-folder writer is on a data-parallel rank other than 0.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from rlpipe.data_parallel import get_rank
from rlpipe.engine import contract_of, redeclare
from rlpipe.runs import (PathLike, atomic_write, atomic_write_bytes, atomic_write_json,
                         atomic_write_text, fsync_dir, is_temp_file)

from ._cfg import setting

__all__ = ["PathLike", "atomic_write", "atomic_write_bytes", "atomic_write_json",
           "atomic_write_text", "fsync_dir", "is_temp_file", "not_writing", "resolve_run_dir", "NotWriting"]


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


class NotWriting:
    """A run-folder writer (checkpoint saver, logger) made on a data-parallel rank other than 0
    (`rlpipe.data_parallel`): it keeps the writer's contract and methods but writes nothing,
    because rank 0 holds the same weights and writes the run's folder, and a folder has one
    writer. Made by the writer's class in place of itself."""

    def __init__(self, writer: type, rank: int) -> None:
        self.writer = writer.__name__
        self.rank = rank
        declared = contract_of(writer)
        if declared is not None:
            redeclare(self, declared)

    def __call__(self, ctx: Any) -> None:
        return None

    # the writers' methods a script or the task calls: nothing to do on this rank
    def attach(self, task: Any) -> None:
        return None

    def save(self, *args: Any, **kwargs: Any) -> None:
        return None

    def flush(self, sync: bool = False) -> None:
        return None

    def close(self) -> None:
        return None

    def watch(self, model: Any) -> None:
        return None

    def __repr__(self) -> str:
        return f"<{self.writer} of data-parallel rank {self.rank}: rank 0 writes the run folder>"


def not_writing(writer: type) -> Optional[NotWriting]:
    """The stand-in for `writer` on a data-parallel rank other than 0; None where this process
    writes the run folder."""
    rank = get_rank()
    return NotWriting(writer, rank) if rank != 0 else None
