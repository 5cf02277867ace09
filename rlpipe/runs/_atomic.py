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
from typing import IO, Any, Callable, Optional, Union

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


def written_file(err: OSError) -> Optional[str]:
    """The file a failed write was writing, as the user knows it: the error's file name, or
    for an atomic write's temporary file the file it was to replace; None when unnamed."""
    if err.filename is None:
        return None
    path = Path(os.fsdecode(err.filename))
    if is_temp_file(path):
        return str(path.with_name(path.name[1:path.name.index(TMP_MARK)]))
    if is_temp_file(path.parent):  # a file in a temporary folder (a checkpoint's state folder)
        return str(path.parent.with_name(path.parent.name[1:path.parent.name.index(TMP_MARK)])
                   / path.name)
    return str(path)


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
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError) and err.filename is None:
            err.filename = str(target)  # a failed write() names no file: name the one written
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
