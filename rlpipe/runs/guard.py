"""Run folders that never mix or lose runs: what `train` and `resume` check around a run.

- `claim_run_dir`: `--run-dir D` on a folder that already holds something is refused (nothing
  in it is touched) unless `overwrite`, which empties an rlpipe run folder (and still refuses
  a folder that is not one).
- `started` / `discard_unstarted`: a run that fails before it wrote any metrics row or checkpoint leaves
  no half-made folder; one that got further records the error in its log.txt.
- `has_checkpoint` / `clear_outputs`: `--resume` of a run killed before its first checkpoint
  restarts it from its config.json.
"""
from __future__ import annotations

import logging
import pathlib
import shutil

from ._layout import RunDir
from ._lock import LOCK_FILE

log = logging.getLogger("rlpipe")


class RunFolderInUseError(FileExistsError, ValueError):
    """`--run-dir` names a folder that already holds files (a usage error: exit 2)."""


def claim_run_dir(run_dir: str, overwrite: bool = False) -> bool:
    """Make `run_dir` ready for a new run; True when this call created it.

    Raises RunFolderInUseError (one line naming `--resume` and `--overwrite`) when it holds files."""
    path = pathlib.Path(run_dir)
    if path.exists() and not path.is_dir():
        raise RunFolderInUseError(f"--run-dir {run_dir}: a file of that name exists; pass a folder")
    if path.is_dir() and any(c.name != LOCK_FILE for c in path.iterdir()):
        if not overwrite:
            raise RunFolderInUseError(
                f"--run-dir {run_dir} already holds a run; continue it with --resume {run_dir}, "
                f"or start it over with --overwrite (deletes its files)")
        if not RunDir(path).config.is_file():
            raise RunFolderInUseError(
                f"--overwrite {run_dir}: that folder is not an rlpipe run folder (no "
                f"config.json), so its files are left alone; pick an empty or new --run-dir")
        log.warning("--overwrite: deleting the run in %s", run_dir)
        for child in path.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            elif child.name != LOCK_FILE:  # the lock stays the same file while it may be held
                child.unlink()
        return False
    created = not path.exists()
    path.mkdir(parents=True, exist_ok=True)
    return created


def has_checkpoint(run_dir: str) -> bool:
    """Whether `<run_dir>/ckpt/` holds a checkpoint a run can resume from: any .pt file but
    best.pt (written by the first evaluation, mid-iteration, with no resume state)."""
    return bool(RunDir(run_dir).checkpoint_files(best=False))


def started(run_dir: str) -> bool:
    """Whether the run left something worth keeping: a metrics row, a checkpoint, or a warning
    or error in its log.txt (e.g. the restarts of an env that crashed before the first
    iteration ended: the traceback the user needs is there)."""
    run = RunDir(run_dir)
    metrics, log_file = run.metrics, run.log
    if run.checkpoint_files() or (metrics.is_file() and metrics.stat().st_size > 0):
        return True
    if not log_file.is_file():
        return False
    with open(log_file, "r", encoding="utf-8", errors="replace") as f:
        return any(" WARNING " in line or " ERROR " in line for line in f)


def clear_outputs(run_dir: str) -> None:
    """Remove metrics, TensorBoard events and checkpoint folder (keep config.json, log.txt)."""
    for target in RunDir(run_dir).outputs:
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()


def discard_unstarted(run_dir: str, created: bool) -> None:
    """Remove what a run that failed before its first iteration wrote: the folder when
    `created` (this run made it), else the files in it (it was empty before)."""
    path = pathlib.Path(run_dir)
    if not path.is_dir():
        return
    if created:
        shutil.rmtree(path)
        if path.parent.is_dir() and not any(path.parent.iterdir()):
            path.parent.rmdir()  # runs/<name>/ made for this run alone
        return
    for child in path.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
