"""What a run saves beyond weights and counters so that `--resume` continues it exactly.

At every end-of-iteration checkpoint (iter_<n>.pt, final.pt) the checkpoint's "resume" entry
holds the RNG states of Python, NumPy and torch, and names a folder `ckpt/state_<total_step>/`
written just before it (atomically, as a whole) with:

- `envs.pkl` — the collector's and evaluator's env states (`EnvManager.get_state()`) and the
  observation the collector acts from next. Pickle: it is unpickled only after the checkpoint's
  manifest (rlpipe.runs) verified its SHA-256 and this user's signature, or the user trusted
  the run folder (`trust`). Async subprocess envs cannot be captured: their runs resume with
  re-seeded envs (not exact).
- `buffer.npz` — the replay buffer with its sampling RNG and sample-ratio counters
  (`replay.save_buffer`, default on; pickle-free).
- `dataset.json` — an offline run's data set sampling state (`OfflineDataset.state_dict()`:
  RNG states, position in the pass, epoch; pickle-free). An offline run has no collector: its
  `envs.pkl` holds the evaluator's envs only.

The checkpoint file itself stays loadable with `torch.load(..., weights_only=True)`.
`prepare_resume` picks the checkpoint to resume from (the newest that verifies, saying which
were refused) and cuts metrics.jsonl and log.txt back to what that checkpoint covered.
"""
from __future__ import annotations

import json
import logging
import os
import pickle
import random
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import numpy as np
import torch

from rlpipe.engine import Role, current_task
from rlpipe.runs import BUFFER_FILE, DATASET_FILE, ENVS_FILE, RunDir, Verified

log = logging.getLogger(__name__)
KEEP_STATES = 4


def rng_state() -> Dict[str, Any]:
    version, internal, gauss = random.getstate()
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {"python": [version, list(internal), gauss],
            "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, cached],
            "torch": torch.get_rng_state()}


def set_rng_state(state: Dict[str, Any]) -> None:
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])


class RunState:
    """Writes and restores the resume state of an off-policy, on-policy or offline
    pipeline (offline: no collector and its env, a `dataset` instead of a buffer)."""

    def __init__(self, run_dir: str, collector_env: Any, evaluator_env: Any, collector: Any,
                 buffer_: Optional[Any] = None, save_buffer: bool = True,
                 dataset: Optional[Any] = None) -> None:
        self.run = RunDir(run_dir)
        self.ckpt_dir = self.run.ckpt
        self.collector_env, self.evaluator_env = collector_env, evaluator_env
        self.collector, self.buffer = collector, buffer_
        self.save_buffer = save_buffer and buffer_ is not None
        self.dataset = dataset

    def __call__(self, ctx: Any) -> Dict[str, Any]:
        """CkptSaver's `resume_state`: write the state folder, return what the .pt keeps."""
        name = self.run.state_name(ctx.total_step)
        exact = True
        envs: Dict[str, Any] = {}
        if self.collector is not None:
            envs["collector_obs"] = self.collector.get_state()
        for key, env, role in (("collector", self.collector_env, Role.COLLECTOR),
                               ("evaluator", self.evaluator_env, Role.EVALUATOR)):
            if env is None:
                continue
            if not current_task().serves(role):
                exact = False
                envs[f"{key}_unsaved"] = "another process of a distributed run ran them"
                continue
            try:
                envs[key] = env.get_state()
            except NotImplementedError as err:  # async subprocesses, EnvPool: it says which
                exact = False
                envs[f"{key}_unsaved"] = str(err)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=self.ckpt_dir))
        try:
            self._write_state(tmp, envs)
        except BaseException as err:  # e.g. a full disk: no half-written state folder is kept
            shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(err, OSError) and err.filename is None:
                err.filename = str(self.run.state_dir(name))
            raise
        target = self.run.state_dir(name)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
        self._prune()
        return {"rng": rng_state(), "state_dir": name, "exact": exact,
                "buffer": self.save_buffer, "dataset": self.dataset is not None}

    def _write_state(self, folder: Path, envs: Dict[str, Any]) -> None:
        with open(folder / ENVS_FILE, "wb") as f:
            pickle.dump(envs, f)
            f.flush()
            os.fsync(f.fileno())
        if self.save_buffer:
            self.buffer.save(str(folder / BUFFER_FILE))
        if self.dataset is not None:
            with open(folder / DATASET_FILE, "w", encoding="utf-8") as f:
                json.dump(self.dataset.state_dict(), f)
                f.flush()
                os.fsync(f.fileno())

    def _prune(self) -> None:
        states = self.run.state_dirs()
        for old in states[:-KEEP_STATES]:
            shutil.rmtree(old, ignore_errors=True)

    def restore(self, resume: Dict[str, Any], verified: Verified) -> None:
        """Put envs, collector, buffer and RNGs back as they were when `resume` was saved.
        Every file is read through `verified` (checked against the signed manifest first)."""
        state = resume["state_dir"]
        if not self.run.state_dir(state).is_dir():
            raise FileNotFoundError(
                f"the checkpoint's state folder {self.run.state_dir(state)} is missing; resume "
                f"from a newer checkpoint or start a new run")
        envs = pickle.loads(verified.read(f"{state}/{ENVS_FILE}"))  # noqa: S301 - verified first
        if self.collector is not None:
            self.collector.set_state(envs["collector_obs"] if "collector" in envs
                                     else {"obs": None})
        for key, env in (("collector", self.collector_env), ("evaluator", self.evaluator_env)):
            if env is None:
                continue
            if key in envs:
                env.set_state(envs[key])
            else:
                why = envs.get(f"{key}_unsaved", "subprocess envs, or another process of a "
                                                  "distributed run ran them")
                log.warning("resume: the %s envs were not saved (%s); they restart from fresh "
                            "episodes, so this resume is not exact", key, why)
        if resume.get("buffer"):
            # loaded from the file, not from bytes in memory (a frame buffer's can be gigabytes)
            self.buffer.load(str(verified.checked_path(f"{state}/{BUFFER_FILE}")))
        if self.dataset is not None:
            if not resume.get("dataset"):
                raise ValueError(f"{self.run.root}: the checkpoint holds no data set sampling "
                                 f"state (it was not written by an offline run); resume it "
                                 f"with the pipeline that wrote it")
            self.dataset.load_state_dict(json.loads(verified.read(f"{state}/{DATASET_FILE}")))
        set_rng_state(resume["rng"])


def prepare_resume(run_dir: str, trust: bool = False) -> str:
    """The checkpoint to resume the run in `run_dir` from: the newest end-of-iteration one whose
    files verify against their signed manifest (any manifest with `trust`). Refused ones are
    logged, naming the file and the checkpoint used instead. metrics.jsonl and log.txt are cut
    back to the lengths that checkpoint recorded, so the resumed run neither repeats nor skips
    a row. Raises FileNotFoundError (naming each refused file) when none verifies."""
    from rlpipe.middleware.ckpt import load_checkpoint

    with warnings.catch_warnings(record=True) as refused:
        warnings.simplefilter("always")
        checkpoint = load_checkpoint(run_dir, which="resumable", trust=trust)
    for warning in refused:
        log.warning("resume: %s", warning.message)
    if any("cannot be loaded" in str(w.message) for w in refused):
        log.warning("resume: using %s instead", checkpoint["path"])
    run = RunDir(run_dir)
    manifest = run.read_manifest(Path(checkpoint["path"]).name)
    dropped = run.truncate_logs((manifest or {}).get("logs") or {})
    for name, size in dropped.items():
        log.info("resume: dropped %d bytes of %s written after %s", size, name,
                 Path(checkpoint["path"]).name)
    return str(checkpoint["path"])


def resumed_context(cfg: Any, policy: Any, run_state: Optional[RunState],
                    ctx_cls: Optional[Callable[[], Any]] = None) -> Any:
    """A fresh context (`ctx_cls()`, default OnlineRLContext), or — when `cfg.resume_from` names
    a checkpoint — the context after the checkpoint's iteration, with policy, envs, buffer (or
    data set) and RNGs restored. A new run with `cfg.init_from` starts from that checkpoint's
    weights (`init_from.py`)."""
    from rlpipe.contexts import OnlineRLContext
    from rlpipe.middleware.ckpt import load_verified

    from .init_from import init_policy

    ctx = (ctx_cls or OnlineRLContext)()
    if not cfg.resume_from:
        if cfg.get("init_from"):
            init_policy(cfg, policy)
        return ctx
    if run_state is None:
        raise ValueError("resume_from needs run_dir (the run folder to continue)")
    # Verified again here: this may be another process than the one that chose the checkpoint,
    # and nothing is unpickled before its hash and signature check out.
    checkpoint, verified = load_verified(cfg.resume_from, signed=True,
                                         trust=bool(cfg.get("resume_trust", False)))
    if not checkpoint.get("resume"):
        raise ValueError(f"{checkpoint['path']} has no resume state (best.pt is saved "
                         f"mid-iteration); resume from iter_<n>.pt or final.pt")
    policy.load_state_dict(checkpoint["policy"])
    ctx.load_kept_state(checkpoint["ctx"])
    run_state.restore(checkpoint["resume"], verified)
    log.info("resumed from %s at %strain_iter %d", checkpoint["path"],
             f"env_step {ctx.env_step}, " if hasattr(ctx, "env_step") else "", ctx.train_iter)
    return ctx.renew()
