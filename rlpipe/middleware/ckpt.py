"""Checkpoints: `CkptSaver` writes them atomically, `load_checkpoint` finds the newest good one.

A checkpoint is a dict saved with `torch.save` and loadable with `torch.load(..., weights_only=True)`:

    {"policy": policy.state_dict(), "ctx": ctx.kept_state(), "extra": extra_state() or None,
     "meta": {"train_iter", "env_step", "eval_value", "time", "rlpipe_version"}}

Files in `<run_dir>/ckpt/` (named by `rlpipe.runs.RunDir`): `iter_<train_iter>.pt` (the last
`keep_last` kept), `best.pt`, `final.pt`, each with its signed manifest `<name>.manifest.json`
(SHA-256 of the `.pt` and of its state folder's files, the log lengths it covers), and
`latest.json`, which names the newest checkpoint and the best value so far. Order of a save:
state folder, `.pt`, manifest, latest.json — each atomic, so a crash leaves a checkpoint either
complete and listed or without a manifest (never loaded as verified). A checkpoint whose policy
state holds a NaN or infinity is never written (`NonFiniteStateError`).
"""
from __future__ import annotations

import collections
import functools
import io
import math
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

import numpy as np
import torch

from rlpipe.engine import Role, contract, current_task
from rlpipe.runs import BEST_CHECKPOINT, CHECKPOINT_EVENT, FINAL_CHECKPOINT, RunDir, iter_checkpoint

from ._cfg import setting
from ._ckpt_load import (_ITER_RE, _age_key, _read_latest, checkpoint_files, load_checkpoint,
                         load_verified, restore_checkpoint)
from ._io import PathLike, atomic_write_bytes, atomic_write_json, not_writing, resolve_run_dir

_ATOMS = (type(None), bool, int, float, complex, str, bytes, bytearray,
          torch.Tensor, torch.Size, torch.dtype, torch.device)


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


class NonFiniteStateError(FloatingPointError):
    """A checkpoint was not written because the policy state holds a NaN or an infinity.

    `checkpoint`: the file that was not written; `tensor`: the state entry that is not finite;
    `last_good`: the newest checkpoint on disk to resume from (a path), or None.
    """

    def __init__(self, checkpoint: Path, tensor: str, last_good: Optional[Path]) -> None:
        where = f"resume from {last_good}" if last_good else "no earlier checkpoint exists"
        super().__init__(f"{checkpoint} was not written: {tensor} holds a NaN or infinity "
                         f"(diverged training, e.g. a learning rate too large); {where}")
        self.checkpoint, self.tensor, self.last_good = checkpoint, tensor, last_good


def _tensors(obj: Any, where: str) -> Iterator[Tuple[str, Any]]:
    if isinstance(obj, (torch.Tensor, np.ndarray)):
        yield where, obj
    elif isinstance(obj, float):
        yield where, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _tensors(v, f"{where}[{k!r}]")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _tensors(v, f"{where}[{i}]")


def first_non_finite(state: Any, where: str = "policy.state_dict()") -> Optional[str]:
    """The name of the first floating tensor (or float) in `state` holding a NaN or infinity."""
    for name, value in _tensors(state, where):
        if isinstance(value, float):
            if not math.isfinite(value):
                return name
        elif isinstance(value, torch.Tensor):
            if value.is_floating_point() or value.is_complex():
                if not bool(torch.isfinite(value).all()):
                    return name
        elif value.dtype.kind in "fc" and not np.isfinite(value).all():
            return name
    return None


@contract(
    reads=("train_iter", "eval_value", "total_step", "last_eval_iter", "last_eval_value"),
    writes=(),
    role=Role.LEARNER,
    optional_reads=("env_step", "env_episode"),
    emits=(CHECKPOINT_EVENT,),
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

    Before writing a resumable checkpoint (iter/final) it emits `CHECKPOINT_EVENT` (with the
    context), on which the logger flushes and fsyncs its files, so the manifest's log lengths
    cover every row written so far.

    `extra_state`: a callable returning more state to save, or a plain dict. `resume_state`:
    a callable `fn(ctx) -> dict` called for the end-of-iteration files (iter/final, not
    best.pt), whose result is stored under "resume" (RNG states, where the env and buffer
    states were written ...; see rlpipe.pipelines.resume). `run_dir` defaults to `cfg.run_dir`.

    DI-engine's current signature is accepted too: `CkptSaver(policy, save_dir, train_freq=100)`
    (or `save_dir=` by name) writes to `<save_dir>/ckpt/` with no config; an integral float
    `train_freq` (DI-engine's `1e4`) counts as that int.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        # on a data-parallel rank other than 0 a stand-in that writes nothing (rank 0 writes)
        return not_writing(cls) or super().__new__(cls)

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
        if isinstance(train_freq, float) and train_freq.is_integer():
            train_freq = int(train_freq)  # DI-engine's scripts write train_freq=1e4
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
        self.ckpt_dir = RunDir(resolve_run_dir(cfg, run_dir, "CkptSaver")).ckpt
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

    @property
    def run(self) -> RunDir:
        """The run folder this saver writes to."""
        return RunDir(self.ckpt_dir.parent)

    def _policy_state(self, ctx: Any, resumable: bool) -> Any:
        policy_state = self.policy.state_dict()
        evaluated = getattr(ctx, "eval_weights", None)
        if not resumable and evaluated:  # best.pt of another process's evaluation
            policy_state = {**policy_state, **evaluated}
        return policy_state

    def _payload(self, ctx: Any, resumable: bool, policy_state: Any) -> Tuple[bytes, Optional[str]]:
        extra = self.extra_state() if callable(self.extra_state) else self.extra_state
        resume = self.resume_state(ctx) if resumable and self.resume_state is not None else None
        eval_value = float(ctx.eval_value) if math.isfinite(ctx.eval_value) else None
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
        state_dir = resume.get("state_dir") if isinstance(resume, dict) else None
        return buf.getvalue(), state_dir if isinstance(state_dir, str) else None

    def __call__(self, ctx: Any) -> None:
        names: List[str] = []
        if self.train_freq is not None and ctx.train_iter // self.train_freq > self._last_bucket:
            self._last_bucket = ctx.train_iter // self.train_freq
            names.append(iter_checkpoint(ctx.train_iter))
        if self.save_best and math.isfinite(ctx.eval_value) and ctx.eval_value > self.best_value:
            self.best_value = float(ctx.eval_value)
            names.append(BEST_CHECKPOINT)
        task = current_task()
        self._arm(task)
        if self.save_finish and not self._final_saved and task.finish:
            self._final_saved = True
            names.append(FINAL_CHECKPOINT)
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
            self.save(ctx, [BEST_CHECKPOINT])

    def _on_finish(self, ctx: Any) -> None:
        if not self._final_saved:
            self.save(ctx, [FINAL_CHECKPOINT])
        self._final_saved = False  # ready for another run() of the same saver
        self._armed_task = None

    def save(self, ctx: Any, names: List[str]) -> List[Path]:
        """Write the checkpoint of `ctx` under each of `names` (atomically), each with its signed
        manifest, then update latest.json. Raises NonFiniteStateError (writing nothing) when the
        policy state holds a NaN or infinity."""
        # iter_<n>.pt and final.pt are written at the end of an iteration: a consistent point to
        # resume from. best.pt is written mid-iteration (at evaluation) and carries no resume state.
        resumable = names != [BEST_CHECKPOINT]
        policy_state = self._policy_state(ctx, resumable)
        bad = first_non_finite(policy_state)
        if bad is not None:
            raise NonFiniteStateError(self.run.checkpoint(names[0]), bad, self._last_good())
        data, state_dir = self._payload(ctx, resumable, policy_state)
        logs: Dict[str, int] = {}
        if resumable:
            task = current_task()
            emit = getattr(task, "emit", None)
            if callable(emit):
                emit(CHECKPOINT_EVENT, ctx)  # the logger flushes + fsyncs metrics and TensorBoard
            logs = self.run.log_lengths()
        paths = [atomic_write_bytes(self.run.checkpoint(name), data) for name in names]
        meta = {"train_iter": int(ctx.train_iter), "env_step": int(getattr(ctx, "env_step", 0))}
        for name in names:
            self.run.write_manifest(name, data, state=state_dir, logs=logs, meta=meta)
        # All names hold the same state; latest.json prefers final, then the periodic file.
        newest = min(names, key=lambda n: 0 if n == FINAL_CHECKPOINT else 1 if _ITER_RE.match(n) else 2)
        atomic_write_json(self.run.latest, {
            "file": newest,
            "train_iter": int(ctx.train_iter),
            "env_step": int(getattr(ctx, "env_step", 0)),
            "time": time.time(),
            "best_value": self.best_value if math.isfinite(self.best_value) else None,
        })
        if any(_ITER_RE.match(n) for n in names):
            self._prune(keep=set(names))
        return paths

    def _last_good(self) -> Optional[Path]:
        # The newest checkpoint a run can resume from (best.pt carries no resume state).
        return next((p for p in checkpoint_files(self.ckpt_dir) if p.name != BEST_CHECKPOINT), None)

    def _prune(self, keep: set) -> None:
        if self.keep_last is None:
            return
        iters = sorted((p for p in self.ckpt_dir.iterdir() if _ITER_RE.match(p.name)), key=_age_key)
        for p in iters[: max(0, len(iters) - self.keep_last)]:
            if p.name not in keep:
                self.run.manifest(p.name).unlink(missing_ok=True)  # unverified before it is gone
                p.unlink(missing_ok=True)

    def close(self) -> None:
        """Nothing to release (checkpoints are written whole); present for the middleware protocol."""


_RESULT_FIELDS = ("total_step", "train_iter", "env_step", "env_episode", "last_eval_iter",
                  "last_eval_value", "eval_value")


@contract(reads=("total_step", "train_iter"), role=Role.LEARNER,
          optional_reads=("env_step", "env_episode", "last_eval_iter", "last_eval_value",
                          "eval_value"))
class final_ctx_saver:  # noqa: N801 (DI-engine's name for a middleware it builds)
    """At the end of a run, pickle the context's counters and last evaluation (the fields in
    `_RESULT_FIELDS` that it declares) as a dict to `<name>/result.pkl`: DI-engine's record
    of how a run ended. Written when the task emits "finish" (a run that ended without error)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        # on a data-parallel rank other than 0 a stand-in that writes nothing (rank 0 writes)
        return not_writing(cls) or super().__new__(cls)

    def __init__(self, name: PathLike) -> None:
        self.path = Path(name) / "result.pkl"
        self._armed_task: Any = None

    def __call__(self, ctx: Any) -> None:
        self.attach(current_task())

    def attach(self, task: Any) -> None:
        """Called by `task.use(saver)`: write the file when the run finishes."""
        if self._armed_task is task or not callable(getattr(task, "once", None)):
            return
        self._armed_task = task
        task.once("finish", self._save)

    def _save(self, ctx: Any) -> None:
        import pickle

        result = {name: getattr(ctx, name) for name in _RESULT_FIELDS if hasattr(ctx, name)}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.path, pickle.dumps(result))


__all__ = ["CHECKPOINT_EVENT", "CkptSaver", "final_ctx_saver", "NonFiniteStateError", "checkpoint_files",
           "first_non_finite", "load_checkpoint", "load_verified", "restore_checkpoint",
           "weights_only_safe"]
