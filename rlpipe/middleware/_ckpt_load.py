"""Loading checkpoints: find the newest good one, verify it against its manifest, load it.

`load_checkpoint` is the public face (re-exported by rlpipe.middleware.ckpt); a refused file
(no match with its manifest, unsigned where a signature is needed, truncated, corrupt) is named
in a warning and the previous checkpoint is tried, or in a one-line error for a single file.
"""
from __future__ import annotations

import io
import json
import pickle
import warnings
import zipfile
from pathlib import Path
from typing import Any, List, Optional, Tuple

import torch

from rlpipe.runs import (BEST_CHECKPOINT, CKPT_DIR, FINAL_CHECKPOINT, ITER_CHECKPOINT_RE,
                         LATEST_FILE, CheckpointError, RunDir, Verified, checkpoint_files_in)

from ._io import PathLike

_ITER_RE = ITER_CHECKPOINT_RE
# What torch.load raises on a truncated, corrupt or foreign file (and a refused manifest).
_LOAD_ERRORS = (CheckpointError, RuntimeError, EOFError, pickle.UnpicklingError, zipfile.BadZipFile, OSError,
                ValueError, KeyError, AttributeError, ImportError, IndexError)


def _age_key(p: Path) -> tuple:
    m = _ITER_RE.match(p.name)
    return (p.stat().st_mtime_ns, int(m.group(1)) if m else -1)


def _read_latest(folder: Path) -> Optional[dict]:
    path = folder / LATEST_FILE
    if not path.is_file():
        return None
    try:
        with open(path, "r", encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as err:
        warnings.warn(f"ignoring {path}: cannot read it ({err}); checkpoints are ordered by time.",
                      RuntimeWarning, stacklevel=3)
        return None
    return data if isinstance(data, dict) else None


def _ckpt_folder(path: Path) -> Path:
    return path / CKPT_DIR if (path / CKPT_DIR).is_dir() else path


def load_verified(path: PathLike, map_location: Any = "cpu", signed: bool = False,
                  trust: bool = False) -> Tuple[dict, Verified]:
    """Load checkpoint file `path` after checking it against its manifest (`RunDir.verify`):
    with `signed`, the whole checkpoint (its state folder too) must verify and carry this
    user's signature unless `trust`. Returns the checkpoint dict and the `Verified` handle
    through which its state files are read. Raises CheckpointError (naming the file) when
    refused, and what torch.load raises on a corrupt file without a manifest."""
    path = Path(path)
    verified = RunDir.of_checkpoint(path).verify(path.name, signed=signed, trust=trust, state=signed)
    data = verified.read(path.name)
    if verified.manifest is None:
        warnings.warn(f"checkpoint {path} has no manifest: it is not verified (written by rlpipe "
                      f"before manifests, or interrupted before its manifest)", RuntimeWarning,
                      stacklevel=3)
    ckpt = torch.load(io.BytesIO(data), map_location=map_location, weights_only=True)
    if not isinstance(ckpt, dict) or "policy" not in ckpt:
        raise ValueError(f"{path}: not an rlpipe checkpoint (no 'policy' entry)")
    ckpt["path"] = str(path)
    return ckpt, verified


def _load_one(path: Path, map_location: Any, signed: bool = False, trust: bool = False) -> dict:
    return load_verified(path, map_location, signed=signed, trust=trust)[0]


def checkpoint_files(path_or_run_dir: PathLike) -> List[Path]:
    """The checkpoint files of a run (or ckpt) folder, newest first: `latest.json`'s file, then by time."""
    folder = _ckpt_folder(Path(path_or_run_dir))
    files = sorted(checkpoint_files_in(folder), key=_age_key, reverse=True)
    latest = _read_latest(folder)
    named = folder / latest["file"] if latest and isinstance(latest.get("file"), str) else None
    if named is not None and named in files:
        files.remove(named)
        files.insert(0, named)
    return files


def load_checkpoint(path_or_run_dir: PathLike, map_location: Any = "cpu", which: str = "latest",
                    trust: bool = False) -> dict:
    """Load a checkpoint with `torch.load(weights_only=True)`; the dict gains a `"path"` entry.

    Every file is first checked against its manifest (SHA-256; see rlpipe.runs): a truncated or
    altered one is refused. `path_or_run_dir`: a `.pt` file (an error naming it if refused or
    unreadable), or a run folder or its `ckpt/` folder. For a folder, `which="latest"` tries the
    newest checkpoint first and, if a file is refused, warns naming it and falls back to the
    next newest; `which="best"` / `"final"` load `best.pt` / `final.pt`; `which="resumable"` the
    newest end-of-iteration checkpoint with resume state whose state folder verifies too and
    whose manifest carries this user's signature (unless `trust`: a run folder the user trusts).
    """
    path = Path(path_or_run_dir)
    if which not in ("latest", "best", "final", "resumable"):
        raise ValueError(f"load_checkpoint(which={which!r}): choose 'latest', 'best', 'final' "
                         f"or 'resumable'.")
    if not path.is_dir():
        if not path.is_file():
            raise FileNotFoundError(f"load_checkpoint: {path} does not exist (pass a run folder, "
                                    f"its ckpt/ folder or a .pt file).")
        try:
            return _load_one(path, map_location, signed=which == "resumable", trust=trust)
        except CheckpointError:
            raise
        except _LOAD_ERRORS as err:
            raise RuntimeError(f"load_checkpoint: cannot load {path}: {err}") from err
    folder = _ckpt_folder(path)
    if which in ("best", "final"):
        name = BEST_CHECKPOINT if which == "best" else FINAL_CHECKPOINT
        return load_checkpoint(folder / name, map_location=map_location)
    tried = []
    signed = which == "resumable"
    for file in checkpoint_files(folder):
        if which == "resumable" and file.name == BEST_CHECKPOINT:
            continue
        try:
            loaded = _load_one(file, map_location, signed=signed, trust=trust)
            if signed and not loaded.get("resume"):
                continue
            return loaded
        except _LOAD_ERRORS as err:
            tried.append(f"{file.name}: {str(err).splitlines()[0] if str(err) else type(err).__name__}")
            warnings.warn(f"checkpoint {file} cannot be loaded ({type(err).__name__}: "
                          f"{str(err).splitlines()[0] if str(err) else ''}); falling back to the "
                          f"previous checkpoint.", RuntimeWarning, stacklevel=2)
    raise FileNotFoundError(
        f"no loadable checkpoint in {folder}"
        + (f" (refused: {'; '.join(tried)})" if tried else " (it holds no .pt file)")
        + ": train with CkptSaver(cfg, policy, ...) writing to this run folder first."
    )


def restore_checkpoint(
    path_or_run_dir: PathLike, policy: Any = None, ctx: Any = None, map_location: Any = "cpu",
    which: str = "latest",
) -> dict:
    """`load_checkpoint`, then load the weights into `policy` and the kept counters into `ctx`."""
    ckpt = load_checkpoint(path_or_run_dir, map_location=map_location, which=which)
    if policy is not None:
        policy.load_state_dict(ckpt["policy"])
    if ctx is not None:
        ctx.load_kept_state(ckpt["ctx"])
    return ckpt


__all__ = ["checkpoint_files", "load_checkpoint", "load_verified", "restore_checkpoint"]
