"""What the command line prints when a run stops on an error: one line for a bad input or an
unwritable run folder (exit 2), one short paragraph for a run that stopped on its own numbers
or env (exit 1) naming what failed and the checkpoint to resume from. `--debug` (or
``RLPIPE_DEBUG=1``) adds the Python traceback above it.
"""
from __future__ import annotations

import os
import sys
import traceback
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Tuple

from rlpipe.runs import BEST_CHECKPOINT, CheckpointError, RunDir
from rlpipe.runs.folder_errors import RunDirError, denied_reason, unwritable_folder

if TYPE_CHECKING:
    from rlpipe.envs import EnvFailureError

__all__ = ["RUN_FAILED", "USAGE_ERROR", "debug_requested", "explain", "format_traceback",
           "last_checkpoint", "report"]

USAGE_ERROR = 2
RUN_FAILED = 1
DEBUG_HINT = "Run with --debug (or RLPIPE_DEBUG=1) to see the traceback."


def debug_requested(flag: bool) -> bool:
    """`--debug`, or RLPIPE_DEBUG set to anything but empty, 0, false or no."""
    return flag or os.environ.get("RLPIPE_DEBUG", "").strip().lower() not in ("", "0", "false",
                                                                             "no")


def last_checkpoint(run_dir: Optional[str]) -> Optional[Tuple[Path, dict]]:
    """(path, record) of the checkpoint that `rlpipe train --resume RUN_DIR` would continue
    from, chosen as resume chooses it (`load_checkpoint(run_dir, which="resumable")`: the newest
    end-of-iteration checkpoint that verifies, with its resume state); `record` holds its
    `train_iter` and `env_step`. None when the run has no folder or no such checkpoint."""
    from rlpipe.middleware import load_checkpoint  # torch: imported when a run has failed

    if not run_dir or not RunDir(run_dir).ckpt.is_dir():
        return None
    with warnings.catch_warnings():  # a refused file is skipped here as resume skips it
        warnings.simplefilter("ignore")
        try:
            checkpoint = load_checkpoint(run_dir, which="resumable")
        except (FileNotFoundError, CheckpointError):
            return None
    meta = checkpoint.get("meta") or {}
    return Path(checkpoint["path"]), {"file": Path(checkpoint["path"]).name,
                                      "train_iter": meta.get("train_iter"),
                                      "env_step": meta.get("env_step")}


def _latest_record(run_dir: Optional[str]) -> Optional[Tuple[Path, dict]]:
    """(path, record) of the checkpoint the run's latest.json names, None when unreadable."""
    if not run_dir:
        return None
    run = RunDir(run_dir)
    record = run.read_latest()
    name = record.get("file") if record is not None else None
    if not isinstance(name, str) or not run.checkpoint(name).is_file():
        return None
    return run.checkpoint(name), record


def _describe(found: Tuple[Path, dict]) -> str:
    path, record = found
    return (f"{path} (train_iter {record.get('train_iter', '?')}, env step "
            f"{record.get('env_step', '?')})")


def _resume_text(err: BaseException, run_dir: Optional[str]) -> str:
    good = getattr(err, "last_good", None)
    latest = _latest_record(run_dir) if good is None else None
    if latest is not None and latest[0].name == BEST_CHECKPOINT:  # newer than any resumable one
        resumable = last_checkpoint(run_dir)
        if resumable is None:
            return (f"The last good checkpoint is {_describe(latest)}: weights only (`rlpipe "
                    f"eval` takes it), no state to resume from, so start the run again once the "
                    f"cause is fixed.")
        return (f"The last good checkpoint is {_describe(latest)} (weights only); `rlpipe train "
                f"--resume {run_dir}` continues from {resumable[0].name}, the newest one with "
                f"resume state, once the cause is fixed.")
    if good is None:
        found = last_checkpoint(run_dir)
        good = _describe(found) if found is not None else None
    if good is None:
        return "No checkpoint was written before it: start the run again once the cause is fixed."
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
    logs = f" The env's tracebacks are in {RunDir(run_dir).log}." if run_dir else ""
    return (f"stopped: {head}. Its last error: "
            f"{_last_error_line(err.last_traceback or str(err))}.{logs} "
            f"{_resume_text(err, run_dir)} Fix the env, or allow more restarts with "
            f"--set env.max_restarts=N (counted within env.restart_window steps). {DEBUG_HINT}")


# what to do when a command's output folder cannot be written, per command
_WRITE_ELSEWHERE = {
    "eval": "pass --video a folder you can write to",
    "export": "pass --out a folder you can write to",
    "plot": "pass --out a file in a folder you can write to",
    "report": "pass --out a folder you can write to",
    "tune": "pass --out a folder you can write to",
    "dataset": "set MINARI_DATASETS_PATH to a folder you can write to",
    "train": "pass a writable folder with --run-dir",
}


def explain(err: BaseException, command: str, run_dir: Optional[str]) -> Tuple[str, int]:
    """(the message for stderr, the exit code) of an error that ended `rlpipe <command>`;
    `run_dir` is the run's folder where the CLI knows it (an error may carry its own)."""
    from rlpipe.envs import EnvFailureError

    run_dir = getattr(err, "run_dir", None) or run_dir
    if isinstance(err, RunDirError):
        return f"rlpipe {command}: error: {err}", USAGE_ERROR
    if isinstance(err, FloatingPointError):  # a non-finite loss or non-finite weights
        text = " ".join(str(err).split())
        return (f"rlpipe {command}: stopped: {text} {_resume_text(err, run_dir)} "
                f"{DEBUG_HINT}"), RUN_FAILED
    if isinstance(err, EnvFailureError):
        return f"rlpipe {command}: {_env_paragraph(err, run_dir)}", RUN_FAILED
    folder = unwritable_folder(err) if isinstance(err, OSError) else None
    if folder is not None:
        fix = _WRITE_ELSEWHERE.get(command, "make it writable or choose another folder")
        return (f"rlpipe {command}: error: cannot write to {folder} ({denied_reason(err)}): "
                f"{fix}"), USAGE_ERROR
    if isinstance(err, OSError) and not isinstance(err, FileNotFoundError):
        where = f" (run folder {run_dir})" if run_dir and str(run_dir) not in str(err) else ""
        return f"rlpipe {command}: error: {err}{where}", USAGE_ERROR
    message = err.args[0] if isinstance(err, KeyError) and err.args else err
    return f"rlpipe {command}: error: {message}", USAGE_ERROR


def format_traceback(err: BaseException) -> str:
    """The full traceback of `err`, as `--debug` shows it."""
    return "".join(traceback.format_exception(err))


def report(err: Exception, command: str, run_dir: Optional[str], debug: bool,
           print_summary: Callable[[Any, Optional[str]], None]) -> Optional[int]:
    """Print what ended `rlpipe <command>` on stderr and return its exit code; None for an
    error the command line does not explain (the caller lets it propagate with its traceback).
    An interrupted run's summary goes through `print_summary(summary, signal_name)`. The error
    classes are imported here, once one is raised, so that `rlpipe list` imports no torch."""
    from rlpipe.engine.parallel import LearnerDiedError
    from rlpipe.envs import EnvFailureError
    from rlpipe.training import Interrupted

    if isinstance(err, Interrupted):
        if err.summary is not None:
            print_summary(err.summary, err.signal_name)
        print(f"rlpipe {command}: {err}", file=sys.stderr)
        return err.exit_code
    if isinstance(err, LearnerDiedError):
        print(f"rlpipe {command}: error: {err}", file=sys.stderr)
        return RUN_FAILED
    # bad input and unwritable folders: one line, exit 2; a run stopped by non-finite numbers or
    # a crash-looping env: one paragraph naming the checkpoint to resume from, exit 1
    if not isinstance(err, (KeyError, ValueError, TypeError, ImportError, OSError,
                            FloatingPointError, EnvFailureError)):
        return None
    if debug:
        print(format_traceback(err), file=sys.stderr, end="")
    message, code = explain(err, command, run_dir)
    print(message, file=sys.stderr)
    return code
