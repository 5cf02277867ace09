"""Run-folder errors: an unwritable, full or invalid run folder becomes one `RunDirError` that
names the folder and the OS error, and a folder this run created is not left half-made.

Every other exception that leaves a run gets the folder as its `run_dir` attribute, so the
command line can name the checkpoint to resume from.
"""
from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
from pathlib import Path
from typing import Iterator, Optional

from ._atomic import written_file
from ._layout import RunDir

__all__ = ["RunDirError", "run_folder_errors", "unwritable_folder"]

log = logging.getLogger("rlpipe")

# OS errors without a file name that can only come from writing the run folder
_WRITE_ERRNOS = {errno.ENOSPC, errno.EROFS, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}


# a full disk or quota: the run stops resumable, the user frees space and resumes
_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}

# OS errors of a write that the user fixes by writing elsewhere, as the message words them
_DENIED = {errno.EROFS: "read-only file system", errno.EACCES: "permission denied",
           errno.EPERM: "operation not permitted"}


def unwritable_folder(err: OSError) -> Optional[str]:
    """The folder a write was refused in (read-only file system, permission denied), or None
    for any other error. The file named by the error (often a temporary file) is not what the
    user needs: its folder is, or the path itself when it is a folder (one that could not be
    made or listed). A permission error on a file that exists and is readable is a read of
    something else, not a write: None."""
    if err.errno not in _DENIED or err.filename is None:
        return None
    path = os.fsdecode(err.filename)
    if os.path.isdir(path):
        return path
    if err.errno != errno.EROFS and os.path.isfile(path) and os.access(path, os.R_OK) \
            and not os.path.basename(path).startswith("."):
        return None
    return os.path.dirname(path) or "."


def denied_reason(err: OSError) -> str:
    """`read-only file system` / `permission denied` / ... as the one-line errors say it."""
    return _DENIED.get(err.errno, err.strerror or str(err))


class RunDirError(OSError):
    """The run folder cannot be made or written; `run_dir` names it, `cause` is the OS error.
    `resuming`: the folder is a run being resumed, so the fix is to resume a writable copy;
    `removed`: the run had written nothing yet and its folder was removed (a full disk: run again)."""

    def __init__(self, run_dir: str, cause: OSError, resuming: bool = False,
                 removed: bool = False) -> None:
        super().__init__(cause.errno, cause.strerror)
        self.run_dir = str(run_dir)
        self.cause = cause
        if cause.errno in _FULL:
            fix = "run again" if removed else f"resume with rlpipe train --resume {self.run_dir}"
            self.message = (f"{(cause.strerror or 'no space left on device').lower()} while "
                            f"writing {written_file(cause) or self.run_dir}: free space and {fix}")
        elif cause.errno in _DENIED:
            fix = (f"copy the run to a writable folder and resume the copy (cp -r {self.run_dir} "
                   f"COPY && rlpipe train --resume COPY)" if resuming else
                   "pass a writable folder with --run-dir and run again")
            self.message = (f"cannot write to the run folder {self.run_dir!r} "
                            f"({denied_reason(cause)}): {fix}.")
        else:
            self.message = (
                f"cannot write the run folder {self.run_dir!r}: {cause}. Pass a writable folder "
                f"with --run-dir (or free space on its disk) and run again.")

    def __str__(self) -> str:
        return self.message


def _within(path: Optional[str], run_dir: Path) -> bool:
    """Whether `path` lies in `run_dir` or is one of its parents (a parent that cannot be made)."""
    if path is None:
        return False
    p = Path(os.path.abspath(os.fspath(path)))
    return p == run_dir or run_dir in p.parents or p in run_dir.parents


def is_folder_error(err: OSError, run_dir: str) -> bool:
    """Whether `err` comes from making or writing `run_dir` (not, say, a missing data file)."""
    folder = Path(os.path.abspath(run_dir))
    names = [n for n in (err.filename, getattr(err, "filename2", None)) if n is not None]
    if names:
        return any(_within(os.fsdecode(n) if isinstance(n, bytes) else str(n), folder)
                   for n in names)
    return err.errno in _WRITE_ERRNOS


def _started(run_dir: Path) -> bool:
    """Whether the run got as far as logging or checkpointing (its folder then holds results)."""
    run = RunDir(run_dir)
    if run.metrics.is_file() and run.metrics.stat().st_size > 0:
        return True
    return bool(run.checkpoint_files())


def _remove_unstarted(run_dir: Path) -> None:
    if not run_dir.is_dir() or _started(run_dir):
        return
    try:
        shutil.rmtree(run_dir)
    except OSError as err:  # reported, not raised: the folder error itself is what the user needs
        log.warning("could not remove the half-made run folder %s: %s", run_dir, err)


@contextlib.contextmanager
def run_folder_errors(run_dir: str, created: bool, resuming: bool = False) -> Iterator[None]:
    """Turn an OS error of `run_dir` into `RunDirError`; `created`: this run made the folder,
    so a folder that holds no results yet is removed on such an error; `resuming`: it is a
    run being resumed (the error then says to resume a copy). Any other exception is re-raised
    as it is, with `run_dir` set on it."""
    try:
        yield
    except RunDirError:
        raise
    except OSError as err:
        if not is_folder_error(err, run_dir):
            _note(err, run_dir)
            raise
        if created:
            _remove_unstarted(Path(run_dir))
        removed = created and not os.path.isdir(run_dir)
        raise RunDirError(run_dir, err, resuming, removed) from err
    except Exception as err:
        _note(err, run_dir)
        raise


def _note(err: BaseException, run_dir: str) -> None:
    if getattr(err, "run_dir", None) is None:
        try:
            err.run_dir = str(run_dir)  # type: ignore[attr-defined]
        except AttributeError:  # an exception type with __slots__: the CLI falls back to --run-dir
            pass
