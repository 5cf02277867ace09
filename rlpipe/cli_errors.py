"""What the command line prints when a run stops on an error: one line for a bad input or an
unwritable run folder (exit 2), one short paragraph for a run that stopped on its own numbers
or env (exit 1) naming what failed and the checkpoint to resume from. `--debug` (or
``RLPIPE_DEBUG=1``) adds the Python traceback above it.
"""
from __future__ import annotations

import json
import os
import traceback
from pathlib import Path
from typing import Optional, Tuple

from rlpipe.envs import EnvFailureError
from rlpipe.middleware.ckpt import CKPT_DIR, LATEST_FILE
from rlpipe.zoo._folder_errors import RunDirError

__all__ = ["RUN_FAILED", "USAGE_ERROR", "debug_requested", "explain", "format_traceback",
           "last_checkpoint"]

USAGE_ERROR = 2
RUN_FAILED = 1
DEBUG_HINT = "Run with --debug (or RLPIPE_DEBUG=1) to see the traceback."


def debug_requested(flag: bool) -> bool:
    """`--debug`, or RLPIPE_DEBUG set to anything but empty, 0, false or no."""
    return flag or os.environ.get("RLPIPE_DEBUG", "").strip().lower() not in ("", "0", "false",
                                                                             "no")


def last_checkpoint(run_dir: Optional[str]) -> Optional[Tuple[Path, dict]]:
    """(path, latest.json's record) of the newest checkpoint of `run_dir`, or None when the
    run has no folder, no checkpoint yet, or an unreadable latest.json."""
    if not run_dir:
        return None
    latest = Path(run_dir) / CKPT_DIR / LATEST_FILE
    try:
        record = json.loads(latest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    name = record.get("file") if isinstance(record, dict) else None
    if not isinstance(name, str) or not (latest.parent / name).is_file():
        return None
    return latest.parent / name, record


def _resume_text(err: BaseException, run_dir: Optional[str]) -> str:
    good = getattr(err, "last_good", None)
    found = last_checkpoint(run_dir)
    if good is None and found is not None:
        path, record = found
        good = f"{path} (train_iter {record.get('train_iter', '?')}, env step " \
               f"{record.get('env_step', '?')})"
    if good is None:
        return "No checkpoint was written before it: start the run again once the cause is fixed."
    if found is not None and found[0].name == "best.pt" and str(found[0]) in str(good):
        older = [p for p in found[0].parent.glob("*.pt")
                 if p.name != "best.pt" and not p.name.startswith(".")]
        if not older:
            return (f"The last good checkpoint is {good}: weights only (`rlpipe eval` takes it), "
                    f"no state to resume from, so start the run again once the cause is fixed.")
        newest = max(older, key=lambda p: p.stat().st_mtime_ns)
        return (f"The last good checkpoint is {good} (weights only); `rlpipe train --resume "
                f"{run_dir}` continues from {newest.name}, the newest one with resume state, "
                f"once the cause is fixed.")
    resume = f" Continue from it with `rlpipe train --resume {run_dir}`" if run_dir else ""
    return f"The last good checkpoint is {good}.{resume} once the cause is fixed."


def _last_error_line(text: Optional[str]) -> str:
    """The exception line and the innermost file line of a formatted traceback."""
    lines = [ln.rstrip() for ln in (text or "").strip().splitlines() if ln.strip()]
    if not lines:
        return "(no traceback)"
    where = next((ln.strip() for ln in reversed(lines) if ln.lstrip().startswith("File ")), "")
    return f"{lines[-1].strip()}" + (f" ({where})" if where else "")


def _env_paragraph(err: EnvFailureError, run_dir: Optional[str]) -> str:
    lines = str(err).strip().splitlines()
    head = lines[0].split("; ")[0].rstrip(":. ") if lines else "an env kept failing"
    logs = f" The env's tracebacks are in {Path(run_dir) / 'log.txt'}." if run_dir else ""
    return (f"stopped: {head}. Its last error: "
            f"{_last_error_line(err.last_traceback or str(err))}.{logs} "
            f"{_resume_text(err, run_dir)} Fix the env, or allow more restarts with "
            f"--set env.max_restarts=N (counted within env.restart_window steps). {DEBUG_HINT}")


def explain(err: BaseException, command: str, run_dir: Optional[str]) -> Tuple[str, int]:
    """(the message for stderr, the exit code) of an error that ended `rlpipe <command>`;
    `run_dir` is the run's folder where the CLI knows it (an error may carry its own)."""
    run_dir = getattr(err, "run_dir", None) or run_dir
    if isinstance(err, RunDirError):
        return f"rlpipe {command}: error: {err}", USAGE_ERROR
    if isinstance(err, FloatingPointError):  # a non-finite loss or non-finite weights
        text = " ".join(str(err).split())
        return (f"rlpipe {command}: stopped: {text} {_resume_text(err, run_dir)} "
                f"{DEBUG_HINT}"), RUN_FAILED
    if isinstance(err, EnvFailureError):
        return f"rlpipe {command}: {_env_paragraph(err, run_dir)}", RUN_FAILED
    if isinstance(err, OSError) and not isinstance(err, FileNotFoundError):
        where = f" (run folder {run_dir})" if run_dir and str(run_dir) not in str(err) else ""
        return f"rlpipe {command}: error: {err}{where}", USAGE_ERROR
    message = err.args[0] if isinstance(err, KeyError) and err.args else err
    return f"rlpipe {command}: error: {message}", USAGE_ERROR


def format_traceback(err: BaseException) -> str:
    """The full traceback of `err`, as `--debug` shows it."""
    return "".join(traceback.format_exception(err))
