"""One writer per run folder: an OS lock on `<run>/.lock`, held for the whole run.

`RunLock(run_dir)` takes an exclusive `fcntl.flock` on the lock file and writes the holder's pid
into it; a second writer (a second `--resume`, or `--run-dir` naming a folder being written) gets
`RunLockedError`, one line naming the pid. The OS drops the lock when the holding process dies,
so a run killed with kill -9 never leaves a stale lock: the file stays, the lock does not.
Readers (`rlpipe eval`, `plot`, `report`) take no lock; they read only complete files
(checkpoints are written atomically, a torn metrics row is skipped). A forked child closes
its copy of the lock's descriptor, so the lock lives exactly as long as the writer process.

Where `fcntl` does not exist (Windows) the lock is a no-op.
"""
from __future__ import annotations

import errno
import functools
import os
from pathlib import Path
from typing import Any, Callable, Optional, Set, TypeVar

try:
    import fcntl
except ImportError:  # Windows: no flock; the folder then has no writer check
    fcntl = None  # type: ignore[assignment]

from ._atomic import PathLike

LOCK_FILE = ".lock"
F = TypeVar("F", bound=Callable[..., Any])
_HELD: Set[int] = set()  # the lock descriptors this process holds


def _close_inherited() -> None:
    # A forked child (an env worker, a local run's collector) gets copies of the writer's lock
    # descriptors; closing them keeps the lock with the writer alone, so a child outliving a
    # killed writer does not keep its folder locked. (Closing a copy never unlocks: the
    # writer's own descriptor still holds the lock.)
    for fd in list(_HELD):
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_inherited)


class RunLockedError(ValueError):
    """Another live process writes this run folder; `pid` is its pid (None if unreadable)."""

    def __init__(self, run_dir: PathLike, pid: Optional[int]) -> None:
        holder = f"process {pid}" if pid is not None else "another process"
        super().__init__(
            f"the run folder {os.fspath(run_dir)} is being written by {holder} (it holds "
            f"{Path(run_dir) / LOCK_FILE}); wait for it to end or stop it (kill {pid or 'PID'}), "
            f"then resume with rlpipe train --resume {os.fspath(run_dir)}; rlpipe eval, plot and "
            f"report can read it meanwhile")
        self.run_dir = os.fspath(run_dir)
        self.pid = pid


def _holder_pid(fd: int) -> Optional[int]:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _try_lock(fd: int, run_dir: PathLike) -> None:
    """Lock `fd` exclusively without waiting; RunLockedError naming the holder if taken."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise RunLockedError(run_dir, _holder_pid(fd)) from None


def check_unlocked(run_dir: PathLike) -> None:
    """Raise RunLockedError if a live process holds `run_dir`'s lock; creates nothing."""
    path = Path(run_dir) / LOCK_FILE
    if fcntl is None or not path.is_file():
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return  # unreadable lock file: the writer's own lock attempt decides
    try:
        _try_lock(fd, run_dir)
    finally:
        os.close(fd)  # closing drops the lock this check may have taken


class RunLock:
    """The writer's lock of a run folder, as a context manager (`with RunLock(run_dir): ...`)."""

    def __init__(self, run_dir: PathLike) -> None:
        self.run_dir = run_dir
        self.path = Path(run_dir) / LOCK_FILE
        self._fd: Optional[int] = None

    def acquire(self) -> "RunLock":
        if fcntl is None or self._fd is not None:
            return self
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            if err.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise
            # a folder this process cannot write has no writer to exclude; the run's first
            # write reports the read-only folder, with what to do
            return self
        try:
            _try_lock(fd, self.run_dir)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        _HELD.add(fd)
        return self

    def release(self) -> None:
        if self._fd is not None:
            _HELD.discard(self._fd)
            os.close(self._fd)  # the lock goes with the descriptor
            self._fd = None

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


def holds_run_lock(fn: F) -> F:
    """Run `fn(run_dir, ...)` holding `run_dir`'s lock (when `run_dir` is an existing folder;
    otherwise `fn` reports the missing folder itself)."""

    @functools.wraps(fn)
    def wrapper(run_dir: PathLike, *args: Any, **kwargs: Any) -> Any:
        if not os.path.isdir(run_dir):
            return fn(run_dir, *args, **kwargs)
        with RunLock(run_dir):
            return fn(run_dir, *args, **kwargs)

    return wrapper  # type: ignore[return-value]
