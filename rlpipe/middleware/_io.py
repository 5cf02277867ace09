"""Small file helpers for middleware that write a run folder: atomic writes, run-folder lookup.

An atomic write goes to a temporary file in the target's own folder, is flushed and fsynced, and
then `os.replace`d over the target, so a reader (or a resumed run) sees either the old file or the
complete new one, never half a file. Temporary names start with `.` and contain `.tmp-`, so
readers that list a folder can skip them with `is_temp_file`.
"""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any, Callable, IO, Optional, Union

from ._cfg import setting

PathLike = Union[str, "os.PathLike[str]"]

_TMP_MARK = ".tmp-"


def is_temp_file(name: Union[str, Path]) -> bool:
    """Whether `name` is a temporary file left by an atomic write (e.g. after a crash)."""
    base = Path(name).name
    return base.startswith(".") and _TMP_MARK in base


def fsync_dir(folder: PathLike) -> None:
    """Make a rename inside `folder` durable (a no-op where folders cannot be opened, e.g. Windows)."""
    try:
        fd = os.open(os.fspath(folder), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on a folder; the rename itself is still atomic
    finally:
        os.close(fd)


def atomic_write(path: PathLike, write: Callable[[IO[bytes]], Any]) -> Path:
    """Write `path` atomically: `write(f)` fills a binary temp file that then replaces `path`.

    If `write` raises, the temp file is removed and `path` is left as it was.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}{_TMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)
    return target


def atomic_write_bytes(path: PathLike, data: bytes) -> Path:
    """Write `data` to `path` atomically."""
    return atomic_write(path, lambda f: f.write(data))


def atomic_write_text(path: PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write `text` to `path` atomically."""
    return atomic_write_bytes(path, text.encode(encoding))


def atomic_write_json(path: PathLike, obj: Any) -> Path:
    """Write `obj` as indented JSON to `path` atomically."""
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


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
