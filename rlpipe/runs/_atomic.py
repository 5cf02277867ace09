"""Atomic writes of run-folder files: a temporary file in the target's folder, fsynced, renamed.

A temporary file is named `.<name>.tmp-<pid>-<random>` (see `is_temp_file`), so a crash leaves
nothing that looks like a finished file.
"""
from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import IO, Any, Callable, Union

PathLike = Union[str, "os.PathLike[str]"]
TMP_MARK = ".tmp-"
_CHUNK = 1 << 20


def temp_name(name: str) -> str:
    """A fresh temporary name for an atomic write of `name` (`.<name>.tmp-<pid>-<random>`)."""
    return f".{name}{TMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}"


def is_temp_file(name: Union[str, Path]) -> bool:
    """Whether `name` is a temporary file left by an atomic write (e.g. after a crash)."""
    base = Path(name).name
    return base.startswith(".") and TMP_MARK in base


def fsync_dir(folder: PathLike) -> None:
    """Make a rename inside `folder` durable (a no-op where folders cannot be opened, e.g. Windows)."""
    try:
        fd = os.open(os.fspath(folder), os.O_RDONLY)
    except OSError:
        return  # no folder handles on this platform: the rename is atomic, only not yet durable
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
    tmp = target.parent / temp_name(target.name)
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


def sha256_file(path: PathLike) -> str:
    """The SHA-256 of a file's bytes, as hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()
