"""Checkpoints: `CkptSaver` writes them atomically, `load_checkpoint` finds the newest good one.

A checkpoint is a dict saved with `torch.save` and loadable with `torch.load(..., weights_only=True)`:

    {"policy": policy.state_dict(), "ctx": ctx.kept_state(), "extra": extra_state() or None,
     "meta": {"train_iter", "env_step", "eval_value", "time", "rlpipe_version"}}

Files in `<run_dir>/ckpt/`: `iter_<train_iter>.pt` (the last `keep_last` kept), `best.pt`,
`final.pt`, and `latest.json`, which names the newest checkpoint and the best value so far.
Every file is written to a temporary file in the same folder, fsynced and renamed over the target,
so a crash leaves either the previous file or the new one, never half of one.
"""
from __future__ import annotations

import collections
import functools
import io
import json
import math
import pickle
import re
import time
import warnings
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Union

import numpy as np
import torch

from rlpipe.engine import Role, contract, current_task

from ._cfg import setting
from ._io import PathLike, atomic_write_bytes, atomic_write_json, is_temp_file, resolve_run_dir

CKPT_DIR = "ckpt"
LATEST_FILE = "latest.json"
_ITER_RE = re.compile(r"^iter_(\d+)\.pt$")
_ATOMS = (type(None), bool, int, float, complex, str, bytes, bytearray,
          torch.Tensor, torch.Size, torch.dtype, torch.device)
# What torch.load raises on a truncated, corrupt or foreign file.
_LOAD_ERRORS = (RuntimeError, EOFError, pickle.UnpicklingError, zipfile.BadZipFile, OSError,
                ValueError, KeyError, AttributeError, ImportError, IndexError)


@functools.lru_cache(maxsize=1)
def _version() -> str:
    try:
        return metadata.version("rlpipe")
    except metadata.PackageNotFoundError:
        return "unknown"


def weights_only_safe(obj: Any, where: str = "checkpoint") -> Any:
    """`obj` with numpy scalars as Python numbers and numpy arrays as tensors, so that
    `torch.load(weights_only=True)` can read it back; a clear TypeError for anything else it cannot.
    Containers without such values are returned as they are (module state dicts keep `_metadata`).
    """
    if isinstance(obj, _ATOMS):
        return obj
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in "biufc":
            raise TypeError(f"cannot checkpoint {where}: a numpy array of dtype {obj.dtype} "
                            f"(only numeric arrays can be saved; convert it to a list or tensor).")
        return torch.from_numpy(np.ascontiguousarray(obj).copy())
    if isinstance(obj, dict):
        items = {k: weights_only_safe(v, f"{where}[{k!r}]") for k, v in obj.items()}
        if type(obj) in (dict, collections.OrderedDict) and all(items[k] is obj[k] for k in obj):
            return obj
        out = collections.OrderedDict(items) if isinstance(obj, collections.OrderedDict) else dict(items)
        if hasattr(obj, "_metadata"):
            out._metadata = obj._metadata  # type: ignore[attr-defined]
        return out
    if isinstance(obj, (list, tuple, set, frozenset)):
        values = [weights_only_safe(v, f"{where}[{i}]") for i, v in enumerate(obj)]
        if type(obj) in (list, tuple, set) and all(a is b for a, b in zip(values, obj)):
            return obj
        return set(values) if isinstance(obj, (set, frozenset)) else (
            list(values) if isinstance(obj, list) else tuple(values))
    raise TypeError(
        f"cannot checkpoint {where}: a {type(obj).__module__}.{type(obj).__qualname__} cannot be read "
        f"back with torch.load(weights_only=True). Store tensors, numbers, strings, and "
        f"dicts/lists/tuples of them (e.g. return obj.state_dict() or a plain dict from extra_state)."
    )


@contract(
    reads=("train_iter", "eval_value", "total_step", "last_eval_iter", "last_eval_value"),
    writes=(),
    role=Role.LEARNER,
    optional_reads=("env_step", "env_episode"),
)
class CkptSaver:
    """Save `policy` (and the run's kept counters) to `<run_dir>/ckpt/` during a run.

    - every `train_freq` train iterations (each time `ctx.train_iter` crosses a multiple of it):
      `iter_<train_iter>.pt`, keeping the newest `keep_last` of them (None keeps all);
      `train_freq` defaults to `cfg.ckpt.train_freq`, and no periodic saves when neither is set;
    - `best.pt` when an evaluation beats the best so far (`save_best`), written when the
      evaluator emits "eval_end", i.e. with exactly the weights that were evaluated;
    - `final.pt` in the iteration where `current_task().finish` is set, or else when the task
      emits "finish" at the end of a run that did not fail (`save_finish`).

    `extra_state`: a callable returning more state to save, or a plain dict. `resume_state`:
    a callable `fn(ctx) -> dict` called for the end-of-iteration files (iter/final, not
    best.pt), whose result is stored under "resume" (RNG states, where the env and buffer
    states were written ...; see rlpipe.zoo._resume). `run_dir` defaults to `cfg.run_dir`.

    DI-engine's current signature is accepted too: `CkptSaver(policy, save_dir, train_freq=100)`
    (or `save_dir=` by name) writes to `<save_dir>/ckpt/` with no config.
    """

    def __init__(
        self,
        cfg: Any = None,
        policy: Any = None,
        train_freq: Optional[int] = None,
        save_finish: bool = True,
        save_best: bool = True,
        run_dir: Optional[PathLike] = None,
        extra_state: Union[Callable[[], Any], Dict[str, Any], None] = None,
        keep_last: Optional[int] = 3,
        resume_state: Optional[Callable[[Any], Dict[str, Any]]] = None,
        save_dir: Optional[PathLike] = None,
    ) -> None:
        # Current DI-engine's form, CkptSaver(policy, save_dir, train_freq=...): the first
        # argument is the policy itself and the second the folder (checkpoints in save_dir/ckpt).
        if callable(getattr(cfg, "state_dict", None)):
            if policy is not None and save_dir is not None:
                raise TypeError("CkptSaver(policy, save_dir, ...) got save_dir twice (as the "
                                "second argument and as save_dir=); pass it once.")
            cfg, policy, save_dir = None, cfg, policy if policy is not None else save_dir
        if save_dir is not None:
            if run_dir is not None and str(run_dir) != str(save_dir):
                raise ValueError(f"CkptSaver(save_dir={str(save_dir)!r}, run_dir={str(run_dir)!r}): "
                                 f"two names for the run folder; pass one.")
            run_dir = save_dir
        if not callable(getattr(policy, "state_dict", None)):
            raise TypeError(f"CkptSaver(policy=...) needs an object with state_dict(); got a "
                            f"{type(policy).__name__} (pass the policy itself, not one of its modes).")
        if train_freq is None:
            train_freq = setting(cfg, "ckpt.train_freq", None)
        if train_freq is not None and (isinstance(train_freq, bool) or not isinstance(train_freq, int)
                                       or train_freq < 1):
            raise ValueError(f"CkptSaver(train_freq={train_freq!r}): must be an int >= 1 "
                             f"(save every that many train iterations) or None (no periodic saves).")
        if keep_last is not None and (not isinstance(keep_last, int) or keep_last < 1):
            raise ValueError(f"CkptSaver(keep_last={keep_last!r}): must be an int >= 1 or None (keep all).")
        if extra_state is not None and not callable(extra_state) and not isinstance(extra_state, dict):
            raise TypeError("CkptSaver(extra_state=...) takes a zero-argument callable or a dict.")
        self.policy = policy
        self.train_freq = train_freq
        self.save_finish = save_finish
        self.save_best = save_best
        self.keep_last = keep_last
        self.extra_state = extra_state
        self.ckpt_dir = resolve_run_dir(cfg, run_dir, "CkptSaver") / CKPT_DIR
        self.ckpt_dir.mkdir(parents=True, exist_ok=True)
        self.best_value = -math.inf
        self._last_bucket = 0
        self._final_saved = False
        self._armed_task: Any = None
        self.resume_state = resume_state
        self._continue_run()

    def _continue_run(self) -> None:
        # A run folder that already holds checkpoints is being resumed: keep its best value (so
        # a worse evaluation does not replace best.pt) and its periodic-save schedule.
        latest = _read_latest(self.ckpt_dir)
        if latest is None:
            return
        best = latest.get("best_value")
        if isinstance(best, (int, float)) and math.isfinite(best):
            self.best_value = float(best)
        if self.train_freq is not None:
            self._last_bucket = int(latest.get("train_iter", 0)) // self.train_freq

    def _payload(self, ctx: Any, resumable: bool) -> bytes:
        extra = self.extra_state() if callable(self.extra_state) else self.extra_state
        resume = self.resume_state(ctx) if resumable and self.resume_state is not None else None
        eval_value = float(ctx.eval_value) if math.isfinite(ctx.eval_value) else None
        policy_state = self.policy.state_dict()
        evaluated = getattr(ctx, "eval_weights", None)
        if not resumable and evaluated:  # best.pt of another process's evaluation
            policy_state = {**policy_state, **evaluated}
        state = {
            "policy": weights_only_safe(policy_state, "policy.state_dict()"),
            "ctx": weights_only_safe(ctx.kept_state(), "ctx.kept_state()"),
            "extra": weights_only_safe(extra, "extra_state"),
            "resume": weights_only_safe(resume, "resume_state"),
            "meta": {
                "train_iter": int(ctx.train_iter),
                "env_step": int(getattr(ctx, "env_step", 0)),
                "eval_value": eval_value,
                "time": time.time(),
                "rlpipe_version": _version(),
            },
        }
        buf = io.BytesIO()
        torch.save(state, buf)
        return buf.getvalue()

    def __call__(self, ctx: Any) -> None:
        names: List[str] = []
        if self.train_freq is not None and ctx.train_iter // self.train_freq > self._last_bucket:
            self._last_bucket = ctx.train_iter // self.train_freq
            names.append(f"iter_{ctx.train_iter}.pt")
        if self.save_best and math.isfinite(ctx.eval_value) and ctx.eval_value > self.best_value:
            self.best_value = float(ctx.eval_value)
            names.append("best.pt")
        task = current_task()
        self._arm(task)
        if self.save_finish and not self._final_saved and task.finish:
            self._final_saved = True
            names.append("final.pt")
        if names:
            self.save(ctx, names)

    def attach(self, task: Any) -> None:
        """Called by `task.use(saver)`: listen for evaluations and the end of the run."""
        self._arm(task)

    def _arm(self, task: Any) -> None:
        if self._armed_task is task or not callable(getattr(task, "once", None)):
            return
        # If the run ends in an iteration where finish was set after this saver ran (e.g. by a
        # later termination_checker), the task's "finish" event still gets final.pt written.
        self._armed_task = task
        if self.save_finish:
            task.once("finish", self._on_finish)
        if self.save_best:
            task.on("eval_end", self._on_eval)

    def _on_eval(self, ctx: Any) -> None:
        # Called by the evaluator as soon as it has a value: the policy still holds exactly the
        # weights that were evaluated (the learner of this iteration has not run yet).
        if math.isfinite(ctx.eval_value) and ctx.eval_value > self.best_value:
            self.best_value = float(ctx.eval_value)
            self.save(ctx, ["best.pt"])

    def _on_finish(self, ctx: Any) -> None:
        if not self._final_saved:
            self.save(ctx, ["final.pt"])
        self._final_saved = False  # ready for another run() of the same saver
        self._armed_task = None

    def save(self, ctx: Any, names: List[str]) -> List[Path]:
        """Write the checkpoint of `ctx` under each of `names` (atomically) and update latest.json."""
        # iter_<n>.pt and final.pt are written at the end of an iteration: a consistent point to
        # resume from. best.pt is written mid-iteration (at evaluation) and carries no resume state.
        data = self._payload(ctx, resumable=names != ["best.pt"])
        paths = [atomic_write_bytes(self.ckpt_dir / name, data) for name in names]
        # All names hold the same state; latest.json prefers final, then the periodic file.
        newest = min(names, key=lambda n: 0 if n == "final.pt" else 1 if _ITER_RE.match(n) else 2)
        atomic_write_json(self.ckpt_dir / LATEST_FILE, {
            "file": newest,
            "train_iter": int(ctx.train_iter),
            "env_step": int(getattr(ctx, "env_step", 0)),
            "time": time.time(),
            "best_value": self.best_value if math.isfinite(self.best_value) else None,
        })
        if any(_ITER_RE.match(n) for n in names):
            self._prune(keep=set(names))
        return paths

    def _prune(self, keep: set) -> None:
        if self.keep_last is None:
            return
        iters = sorted((p for p in self.ckpt_dir.iterdir() if _ITER_RE.match(p.name)), key=_age_key)
        for p in iters[: max(0, len(iters) - self.keep_last)]:
            if p.name not in keep:
                p.unlink(missing_ok=True)

    def close(self) -> None:
        """Nothing to release (checkpoints are written whole); present for the middleware protocol."""


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


def _load_one(path: Path, map_location: Any) -> dict:
    ckpt = torch.load(path, map_location=map_location, weights_only=True)
    if not isinstance(ckpt, dict) or "policy" not in ckpt:
        raise ValueError("not an rlpipe checkpoint (no 'policy' entry)")
    ckpt["path"] = str(path)
    return ckpt


def checkpoint_files(path_or_run_dir: PathLike) -> List[Path]:
    """The checkpoint files of a run (or ckpt) folder, newest first: `latest.json`'s file, then by time."""
    folder = _ckpt_folder(Path(path_or_run_dir))
    files = sorted((p for p in folder.glob("*.pt") if not is_temp_file(p.name) and p.is_file()),
                   key=_age_key, reverse=True)
    latest = _read_latest(folder)
    named = folder / latest["file"] if latest and isinstance(latest.get("file"), str) else None
    if named is not None and named in files:
        files.remove(named)
        files.insert(0, named)
    return files


def load_checkpoint(path_or_run_dir: PathLike, map_location: Any = "cpu", which: str = "latest") -> dict:
    """Load a checkpoint with `torch.load(weights_only=True)`; the dict gains a `"path"` entry.

    `path_or_run_dir`: a `.pt` file (loaded as is; an error if it is unreadable), or a run folder
    or its `ckpt/` folder. For a folder, `which="latest"` tries the newest checkpoint first and,
    if a file is truncated or corrupt, warns naming it and falls back to the next newest;
    `which="best"` / `"final"` load `best.pt` / `final.pt`; `which="resumable"` the newest
    loadable end-of-iteration checkpoint that carries resume state.
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
            return _load_one(path, map_location)
        except _LOAD_ERRORS as err:
            raise RuntimeError(f"load_checkpoint: cannot load {path}: {err}") from err
    folder = _ckpt_folder(path)
    if which in ("best", "final"):
        return load_checkpoint(folder / f"{which}.pt", map_location=map_location)
    tried = []
    for file in checkpoint_files(folder):
        if which == "resumable" and file.name == "best.pt":
            continue
        try:
            loaded = _load_one(file, map_location)
            if which == "resumable" and not loaded.get("resume"):
                continue
            return loaded
        except _LOAD_ERRORS as err:
            tried.append(file.name)
            warnings.warn(f"checkpoint {file} cannot be loaded ({type(err).__name__}: "
                          f"{str(err).splitlines()[0] if str(err) else ''}); falling back to the "
                          f"previous checkpoint.", RuntimeWarning, stacklevel=2)
    raise FileNotFoundError(
        f"no loadable checkpoint in {folder}"
        + (f" (unreadable: {', '.join(tried)})" if tried else " (it holds no .pt file)")
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


__all__ = ["CkptSaver", "checkpoint_files", "load_checkpoint", "restore_checkpoint", "weights_only_safe"]
