"""The run folder: its layout, atomic writes, config.json, and the signed checkpoint manifests.

This is the one package that knows where things live in a run folder; middleware, zoo and CLI ask
a `RunDir` for paths instead of spelling file names themselves:

    <run>/config.json  metrics.jsonl  log.txt  tb/events.out.tfevents.*
    <run>/.lock                          the writer's lock (fcntl.flock) and its pid
    <run>/data_files.json                (offline runs) the data set's files: size, SHA-256
    <run>/wandb/                         Weights & Biases' files (logger.wandb=True)
    <run>/ckpt/<name>.pt                 a checkpoint (iter_<n>.pt, best.pt, final.pt)
    <run>/ckpt/<name>.manifest.json      its manifest: SHA-256 of every file it consists of,
                                         the log lengths it covers, an HMAC signature
    <run>/ckpt/latest.json               the newest checkpoint and the best value so far
    <run>/ckpt/state_<n>/envs.pkl, buffer.npz   resume state of end-of-iteration checkpoints
    <run>/ckpt/state_<n>/dataset.json    (offline runs) the data set's sampling state
    <run>/export/policy.onnx (or .pt)    `rlpipe export`'s file, policy.onnx.json its sidecar

A manifest is written last, atomically, after every file it lists; a checkpoint without one was
never completed (or was written by rlpipe before manifests existed). The signature is
HMAC-SHA256 over the manifest with a per-user key (`key_file()`), so a run folder handed over by
someone else is refused before anything in it is unpickled, unless the user trusts it.
An atomic write goes to a temporary file in the target's folder (named `.<name>.tmp-...`, see
`is_temp_file`), is fsynced, and then renamed over the target.

Modules: `_layout.py` (`RunDir`, the names), `_atomic.py` (atomic writes), `_signing.py` (the
key and signature), `_verified.py` (`Verified`, `CheckpointError`), `_lock.py` (one writer per
folder), `_data_files.py` (the data a run trains from). A run's lifecycle, imported from its
module (this package does not load them): `create.py` (a new run folder, config.json, the log
file), `guard.py` (claiming a folder, a run that failed before it started), `folder_errors.py`
(an unwritable or full folder as one error), `resume_checks.py` (what `--resume` refuses),
`seeds.py` (one run per seed). The resume state itself (`rlpipe.pipelines.resume`) sits above
the middleware it loads checkpoints with.
"""
from ._atomic import (PathLike, atomic_write, atomic_write_bytes, atomic_write_json,
                      atomic_write_text, fsync_dir, is_temp_file, sha256_file, written_file)
from ._layout import (BEST_CHECKPOINT, BUFFER_FILE, CKPT_DIR, CONFIG_FILE, DATA_FILES_FILE,
                      DATASET_FILE, ENVS_FILE,
                      EXPORT_SUFFIXES, FINAL_CHECKPOINT, ITER_CHECKPOINT_RE, LATEST_FILE, LOG_FILE,
                      MANIFEST_FORMAT, MANIFEST_SUFFIX, METRICS_FILE, TB_DIR, RunDir,
                      checkpoint_files_in, iter_checkpoint)
from ._data_files import changed_data_file, record_data_files, recorded_data_files
from ._lock import LOCK_FILE, RunLock, RunLockedError, check_unlocked, holds_run_lock
from ._signing import KEY_ENV, key_file, signing_key
from ._verified import CheckpointError, Verified

#: The task event CkptSaver emits (with the ctx) before it declares a resumable checkpoint:
#: listeners (online_logger) flush and fsync what they wrote, so the log lengths it records hold.
CHECKPOINT_EVENT = "checkpoint_flush"

__all__ = ["BEST_CHECKPOINT", "BUFFER_FILE", "CHECKPOINT_EVENT", "CKPT_DIR", "CONFIG_FILE",
           "CheckpointError", "DATA_FILES_FILE", "DATASET_FILE", "ENVS_FILE", "EXPORT_SUFFIXES", "FINAL_CHECKPOINT", "ITER_CHECKPOINT_RE", "KEY_ENV",
           "LATEST_FILE", "LOCK_FILE", "LOG_FILE", "MANIFEST_FORMAT", "MANIFEST_SUFFIX", "METRICS_FILE",
           "PathLike", "RunDir", "RunLock", "RunLockedError", "TB_DIR", "Verified", "atomic_write", "atomic_write_bytes",
           "atomic_write_json", "atomic_write_text", "checkpoint_files_in", "fsync_dir",
           "is_temp_file",
           "iter_checkpoint", "key_file", "sha256_file", "signing_key", "written_file"]
