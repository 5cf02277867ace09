"""The layout of a run folder (`RunDir`): named paths, config.json, logs, checkpoint manifests.

See the package docstring (`rlpipe.runs`) for the layout itself.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ._atomic import PathLike, atomic_write_json, atomic_write_text, is_temp_file, sha256_file
from ._signing import signature, signing_key
from ._verified import CheckpointError, Verified

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"
LOG_FILE = "log.txt"
TB_DIR = "tb"
WANDB_DIR = "wandb"
TB_EVENTS_GLOB = "events.out.tfevents.*"
CKPT_DIR = "ckpt"
LATEST_FILE = "latest.json"
CHECKPOINT_SUFFIX = ".pt"
BEST_CHECKPOINT = "best.pt"
FINAL_CHECKPOINT = "final.pt"
ITER_CHECKPOINT_RE = re.compile(r"^iter_(\d+)\.pt$")
MANIFEST_SUFFIX = ".manifest.json"
STATE_PREFIX = "state_"
_STATE_RE = re.compile(r"^state_(\d+)$")
ENVS_FILE = "envs.pkl"
BUFFER_FILE = "buffer.npz"
DATASET_FILE = "dataset.json"
DATA_FILES_FILE = "data_files.json"
MANIFEST_FORMAT = "rlpipe-manifest-1"
EXPORT_DIR = "export"
EXPORT_SUFFIXES = {"onnx": ".onnx", "torchscript": ".pt"}  # `rlpipe export --format` → suffix


def checkpoint_files_in(folder: PathLike, best: bool = True) -> List[Path]:
    """The checkpoint files in checkpoint folder `folder` (no temporary files), by name;
    without best.pt when not `best` (the end-of-iteration ones, which carry resume state)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob(f"*{CHECKPOINT_SUFFIX}")
                  if p.is_file() and not is_temp_file(p.name)
                  and (best or p.name != BEST_CHECKPOINT))


def iter_checkpoint(train_iter: int) -> str:
    """The name of the periodic checkpoint at `train_iter` (`iter_<n>.pt`)."""
    return f"iter_{int(train_iter)}{CHECKPOINT_SUFFIX}"


class RunDir:
    """A run folder: named paths, config.json, and the checkpoint manifests."""

    def __init__(self, path: PathLike) -> None:
        self.root = Path(path)

    def __repr__(self) -> str:
        return f"RunDir({str(self.root)!r})"

    @classmethod
    def of_checkpoint(cls, file: PathLike) -> "RunDir":
        """The run folder holding checkpoint `file` (`<run>/ckpt/<name>.pt`)."""
        return cls(Path(file).parent.parent)

    config = property(lambda self: self.root / CONFIG_FILE, doc="config.json")
    metrics = property(lambda self: self.root / METRICS_FILE, doc="metrics.jsonl")
    log = property(lambda self: self.root / LOG_FILE, doc="log.txt")
    tb = property(lambda self: self.root / TB_DIR, doc="the TensorBoard folder")
    ckpt = property(lambda self: self.root / CKPT_DIR, doc="the checkpoint folder")
    wandb = property(lambda self: self.root / WANDB_DIR,
                     doc="Weights & Biases' folder (logger.wandb=True)")
    latest = property(lambda self: self.root / CKPT_DIR / LATEST_FILE, doc="ckpt/latest.json")
    best = property(lambda self: self.checkpoint(BEST_CHECKPOINT), doc="ckpt/best.pt")
    final = property(lambda self: self.checkpoint(FINAL_CHECKPOINT), doc="ckpt/final.pt")
    data_files = property(lambda self: self.root / DATA_FILES_FILE,
                          doc="data_files.json: an offline run's data set files, sized and hashed")
    outputs = property(lambda self: (self.metrics, self.tb, self.ckpt),
                       doc="what a run writes besides config.json and log.txt")

    def read_latest(self) -> Optional[Dict[str, Any]]:
        """The record of ckpt/latest.json (`file`, `train_iter`, `env_step`, `best_value`, ...);
        None when it is missing, unreadable or not a JSON object."""
        try:
            record = json.loads(self.latest.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            return None
        return record if isinstance(record, dict) else None

    def checkpoint_files(self, best: bool = True) -> List[Path]:
        """The checkpoint files in `ckpt/` (no temporary files), by name; without best.pt when
        not `best` (the end-of-iteration ones, which carry resume state)."""
        return checkpoint_files_in(self.ckpt, best)

    def state_dirs(self) -> List[Path]:
        """The state folders in `ckpt/` (`state_<total_step>`), oldest (smallest step) first."""
        if not self.ckpt.is_dir():
            return []
        found = [(int(m.group(1)), p) for p in self.ckpt.iterdir()
                 if p.is_dir() and (m := _STATE_RE.match(p.name))]
        return [p for _, p in sorted(found)]

    def tb_event_files(self) -> List[Path]:
        """The TensorBoard event files in `tb/` (none when it does not exist)."""
        return sorted(self.tb.glob(TB_EVENTS_GLOB)) if self.tb.is_dir() else []

    def checkpoint(self, name: str) -> Path:
        """`ckpt/<name>` (e.g. `iter_100.pt`)."""
        return self.ckpt / name

    def export_file(self, fmt: str) -> Path:
        """Where `rlpipe export --format fmt` writes by default: `export/policy.onnx` (onnx) or
        `export/policy.pt` (torchscript); its sidecar JSON goes beside it."""
        if fmt not in EXPORT_SUFFIXES:
            raise ValueError(f"no export format {fmt!r}; choose one of {sorted(EXPORT_SUFFIXES)}")
        return self.root / EXPORT_DIR / f"policy{EXPORT_SUFFIXES[fmt]}"

    @staticmethod
    def state_name(total_step: int) -> str:
        """The state folder name of an end-of-iteration checkpoint at `total_step`."""
        return f"{STATE_PREFIX}{int(total_step)}"

    def state_dir(self, name: str) -> Path:
        """`ckpt/<name>` for a state folder name such as `state_1024`."""
        return self.ckpt / name

    def envs_file(self, state: str) -> Path:
        """`ckpt/<state>/envs.pkl`: the envs' and collector's state."""
        return self.state_dir(state) / ENVS_FILE

    def buffer_file(self, state: str) -> Path:
        """`ckpt/<state>/buffer.npz`: the replay buffer."""
        return self.state_dir(state) / BUFFER_FILE

    def dataset_file(self, state: str) -> Path:
        """`ckpt/<state>/dataset.json`: an offline run's data set sampling state (JSON)."""
        return self.state_dir(state) / DATASET_FILE

    def manifest(self, checkpoint: str) -> Path:
        """The manifest of checkpoint `checkpoint` (`iter_100.pt` → `ckpt/iter_100.manifest.json`)."""
        return self.ckpt / (Path(checkpoint).stem + MANIFEST_SUFFIX)

    # -- config.json --
    def write_config(self, payload: Mapping[str, Any]) -> Path:
        """Write config.json atomically."""
        self.root.mkdir(parents=True, exist_ok=True)
        return atomic_write_text(self.config, json.dumps(payload, indent=2, default=str) + "\n")

    def read_config(self) -> Tuple[str, Dict[str, Any]]:
        """(entry name, config) from config.json; one-line errors naming the file."""
        path = self.config
        if not path.is_file():
            raise FileNotFoundError(
                f"{str(self.root)!r} is not an rlpipe run folder: it has no {CONFIG_FILE}. Pass the "
                f"folder that `rlpipe train` printed (runs/<entry>/<timestamp>/).")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise ValueError(f"{path}: cannot read it ({err}); the run folder is damaged") from err
        if not text.strip():
            raise ValueError(f"{path} is empty (the run was killed while writing it?): the run "
                             f"cannot be evaluated or resumed; start a new run")
        try:
            payload = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path} is not valid JSON ({err.msg} at line {err.lineno}, column "
                             f"{err.colno}; truncated or edited?): restore it or start a new run"
                             ) from err
        if (not isinstance(payload, dict) or not isinstance(payload.get("entry"), str)
                or not isinstance(payload.get("config"), dict)):
            raise ValueError(f"{path} is not an rlpipe config: it needs an \"entry\" name and a "
                             f"\"config\" object (as `rlpipe train` writes it)")
        return payload["entry"], payload["config"]

    # -- logs --
    def log_lengths(self) -> Dict[str, int]:
        """Byte lengths of metrics.jsonl and log.txt, after fsyncing both and flushing every
        logging handler that writes log.txt (what a checkpoint covers)."""
        import logging

        for logger in (logging.getLogger(), logging.getLogger("rlpipe")):
            for handler in list(logger.handlers):
                if isinstance(handler, logging.FileHandler) and Path(handler.baseFilename) == \
                        self.log.absolute():
                    handler.flush()
        lengths = {}
        for path in (self.metrics, self.log):
            if path.is_file():
                with open(path, "rb") as f:  # fsync needs no write access
                    os.fsync(f.fileno())
                lengths[path.name] = path.stat().st_size
        return lengths

    def truncate_logs(self, lengths: Mapping[str, int]) -> Dict[str, int]:
        """Cut metrics.jsonl and log.txt back to `lengths` (from a manifest); returns the bytes
        dropped per file. A file shorter than its recorded length is left as it is."""
        dropped = {}
        for path in (self.metrics, self.log):
            size = lengths.get(path.name)
            if isinstance(size, int) and path.is_file() and path.stat().st_size > size >= 0:
                dropped[path.name] = path.stat().st_size - size
                with open(path, "rb+") as f:
                    f.truncate(size)
                    os.fsync(f.fileno())
        return dropped

    # -- manifests --
    def write_manifest(self, checkpoint: str, data: bytes, state: Optional[str] = None,
                       logs: Optional[Mapping[str, int]] = None,
                       meta: Optional[Mapping[str, Any]] = None) -> Path:
        """Sign and write the manifest of checkpoint `checkpoint` (whose bytes are `data`), listing
        the files of state folder `state` too. Call it after every listed file is on disk."""
        files = {checkpoint: hashlib.sha256(data).hexdigest()}
        if state is not None:
            for file in sorted(self.state_dir(state).iterdir()):
                if file.is_file() and not is_temp_file(file.name):
                    files[f"{state}/{file.name}"] = sha256_file(file)
        manifest: Dict[str, Any] = {"format": MANIFEST_FORMAT, "checkpoint": checkpoint,
                                    "files": files, "state_dir": state, "logs": dict(logs or {}),
                                    "meta": dict(meta or {})}
        manifest["signature"] = signature(manifest, signing_key())
        return atomic_write_json(self.manifest(checkpoint), manifest)

    def read_manifest(self, checkpoint: str) -> Optional[Dict[str, Any]]:
        """The manifest of `checkpoint`, None when it has none; CheckpointError when unreadable."""
        path = self.manifest(checkpoint)
        if not path.is_file():
            return None
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise CheckpointError(path, f"unreadable manifest ({err}); the checkpoint "
                                        f"{checkpoint} cannot be verified") from err
        if (not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT
                or manifest.get("checkpoint") != checkpoint
                or not isinstance(manifest.get("files"), dict)):
            raise CheckpointError(path, f"not a manifest of {checkpoint} (altered or foreign)")
        return manifest

    def verify(self, checkpoint: str, signed: bool, trust: bool = False,
               state: bool = True) -> "Verified":
        """Check `checkpoint`'s manifest before anything of it is loaded.

        `signed`: the manifest must carry this user's signature (needed before unpickling the
        state folder) unless `trust`. A checkpoint without a manifest passes only with `trust`
        or when not `signed` (its `.pt` is read with weights_only=True). `state=False` skips
        the state folder's files (e.g. for eval, which reads only the `.pt`).
        """
        manifest = self.read_manifest(checkpoint)
        if manifest is None:
            if signed and not trust:
                raise CheckpointError(self.manifest(checkpoint), (
                    f"missing: checkpoint {checkpoint} is not verified (written by rlpipe before "
                    f"manifests, interrupted, or not by this machine); if you trust this run "
                    f"folder, pass --trust-run-dir (resume(..., trust=True))"))
            return Verified(self, checkpoint, None)
        if signed and not trust:
            expected = signature(manifest, signing_key())
            if not hmac.compare_digest(expected, str(manifest.get("signature", ""))):
                raise CheckpointError(self.manifest(checkpoint), (
                    "signature does not match this user's key (altered, or written on another "
                    "machine or account); refusing to unpickle its state. If you trust this run "
                    "folder, pass --trust-run-dir (resume(..., trust=True))"))
        verified = Verified(self, checkpoint, manifest)
        for rel in manifest["files"]:
            if state or rel == checkpoint:
                verified.check(rel)
        return verified
