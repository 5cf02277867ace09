"""The run folder: its layout, atomic writes, config.json, and the signed checkpoint manifests.

This is the one module that knows where things live in a run folder; middleware, zoo and CLI ask
a `RunDir` for paths instead of spelling file names themselves:

    <run>/config.json  metrics.jsonl  log.txt  tb/
    <run>/ckpt/<name>.pt                 a checkpoint (iter_<n>.pt, best.pt, final.pt)
    <run>/ckpt/<name>.manifest.json      its manifest: SHA-256 of every file it consists of,
                                         the log lengths it covers, an HMAC signature
    <run>/ckpt/latest.json               the newest checkpoint and the best value so far
    <run>/ckpt/state_<n>/envs.pkl, buffer.npz   resume state of end-of-iteration checkpoints

A manifest is written last, atomically, after every file it lists; a checkpoint without one was
never completed (or was written by rlpipe before manifests existed). The signature is
HMAC-SHA256 over the manifest with a per-user key (`key_file()`), so a run folder handed over by
someone else is refused before anything in it is unpickled, unless the user trusts it.
An atomic write goes to a temporary file in the target's folder (named `.<name>.tmp-...`, see
`is_temp_file`), is fsynced, and then renamed over the target.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, IO, Mapping, Optional, Tuple, Union

PathLike = Union[str, "os.PathLike[str]"]

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"
LOG_FILE = "log.txt"
TB_DIR = "tb"
CKPT_DIR = "ckpt"
LATEST_FILE = "latest.json"
MANIFEST_SUFFIX = ".manifest.json"
ENVS_FILE = "envs.pkl"
BUFFER_FILE = "buffer.npz"
MANIFEST_FORMAT = "rlpipe-manifest-1"
KEY_ENV = "RLPIPE_KEY_FILE"
#: The task event CkptSaver emits (with the ctx) before it declares a resumable checkpoint:
#: listeners (online_logger) flush and fsync what they wrote, so the log lengths it records hold.
CHECKPOINT_EVENT = "checkpoint_flush"
_TMP_MARK = ".tmp-"
_CHUNK = 1 << 20


class CheckpointError(ValueError):
    """A checkpoint (or one of its files) that must not be loaded; the message names the file."""

    def __init__(self, path: PathLike, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = Path(path)
        self.reason = reason


# -- atomic writes ---------------------------------------------------------------------------

def is_temp_file(name: Union[str, Path]) -> bool:
    """Whether `name` is a temporary file left by an atomic write (e.g. after a crash)."""
    base = Path(name).name
    return base.startswith(".") and _TMP_MARK in base


def fsync_dir(folder: PathLike) -> None:
    """Make a rename inside `folder` durable (a no-op where folders cannot be opened, e.g. Windows)."""
    try:
        fd = os.open(os.fspath(folder), os.O_RDONLY)
    except OSError:
        return  # no folder handles on this platform: the rename is atomic, only not yet durable
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on a folder; the rename itself is still atomic
    finally:
        os.close(fd)


def atomic_write(path: PathLike, write: Callable[[IO[bytes]], Any]) -> Path:
    """Write `path` atomically: `write(f)` fills a binary temp file that then replaces `path`.

    If `write` raises, the temp file is removed and `path` is left as it was.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}{_TMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)
    return target


def atomic_write_bytes(path: PathLike, data: bytes) -> Path:
    """Write `data` to `path` atomically."""
    return atomic_write(path, lambda f: f.write(data))


def atomic_write_text(path: PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write `text` to `path` atomically."""
    return atomic_write_bytes(path, text.encode(encoding))


def atomic_write_json(path: PathLike, obj: Any) -> Path:
    """Write `obj` as indented JSON to `path` atomically."""
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def sha256_file(path: PathLike) -> str:
    """The SHA-256 of a file's bytes, as hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


# -- the signing key -------------------------------------------------------------------------

def key_file() -> Path:
    """Where this user's signing key lives: `$RLPIPE_KEY_FILE`, else
    `$XDG_CONFIG_HOME/rlpipe/hmac.key` (XDG_CONFIG_HOME defaults to ~/.config)."""
    explicit = os.environ.get(KEY_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "rlpipe" / "hmac.key"


def signing_key() -> bytes:
    """This user's HMAC key, created on first use (32 random bytes, mode 0600).

    Creation is atomic and race-free: the key is written to a private temp file and hard-linked
    to its name, so two processes starting at once agree on one key, and no reader sees half of it.
    """
    path = key_file()
    if not path.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.parent / f".{path.name}{_TMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(32).hex().encode("ascii"))
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass  # another process created it first: use theirs
        finally:
            tmp.unlink(missing_ok=True)
        fsync_dir(path.parent)
    info = path.stat()
    if hasattr(os, "getuid") and (info.st_mode & (stat.S_IRWXG | stat.S_IRWXO)
                                  or info.st_uid != os.getuid()):
        raise PermissionError(
            f"signing key {path} is readable by others or not yours (mode "
            f"{stat.filemode(info.st_mode)}): anyone who can read it can forge run folders; "
            f"run `chmod 600 {path}` (or delete it to make a new key; existing runs then need "
            f"--trust-run-dir to resume)")
    key = path.read_bytes().strip()
    if len(key) < 32:
        raise ValueError(f"signing key {path} is empty or too short ({len(key)} bytes): delete it "
                         f"and a new one is made on next use, or point {KEY_ENV} at a valid key")
    return key


def _signature(manifest: Mapping[str, Any], key: bytes) -> str:
    body = {k: v for k, v in manifest.items() if k != "signature"}
    blob = json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return hmac.new(key, blob, hashlib.sha256).hexdigest()


# -- the run folder --------------------------------------------------------------------------

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
    latest = property(lambda self: self.root / CKPT_DIR / LATEST_FILE, doc="ckpt/latest.json")

    def checkpoint(self, name: str) -> Path:
        """`ckpt/<name>` (e.g. `iter_100.pt`)."""
        return self.ckpt / name

    def state_dir(self, name: str) -> Path:
        """`ckpt/<name>` for a state folder name such as `state_1024`."""
        return self.ckpt / name

    def envs_file(self, state: str) -> Path:
        return self.state_dir(state) / ENVS_FILE

    def buffer_file(self, state: str) -> Path:
        return self.state_dir(state) / BUFFER_FILE

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
        manifest["signature"] = _signature(manifest, signing_key())
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
            expected = _signature(manifest, signing_key())
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


class Verified:
    """A checkpoint whose manifest passed `RunDir.verify`; `read(rel)` returns a listed file's
    bytes after checking them against the manifest (so what is loaded is what was checked)."""

    def __init__(self, run: RunDir, checkpoint: str, manifest: Optional[Dict[str, Any]]) -> None:
        self.run, self.checkpoint, self.manifest = run, checkpoint, manifest

    @property
    def logs(self) -> Dict[str, int]:
        return dict((self.manifest or {}).get("logs") or {})

    def _path(self, rel: str) -> Path:
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            raise CheckpointError(self.run.manifest(self.checkpoint),
                                  f"lists a file outside ckpt/ ({rel!r}); altered manifest")
        return self.run.ckpt / rel

    def check(self, rel: str) -> None:
        """Raise CheckpointError naming the file unless it exists and matches its hash."""
        self.read(rel)

    def read(self, rel: str) -> bytes:
        """The bytes of `ckpt/<rel>`, checked against the manifest (unchecked when it has none)."""
        path = self._path(rel)
        if self.manifest is not None and rel not in self.manifest["files"]:
            raise CheckpointError(path, f"not listed in the manifest of {self.checkpoint}")
        try:
            data = path.read_bytes()
        except FileNotFoundError as err:
            raise CheckpointError(path, f"missing (pruned or deleted); checkpoint "
                                        f"{self.checkpoint} cannot be used") from err
        except OSError as err:
            raise CheckpointError(path, f"cannot read it ({err})") from err
        if self.manifest is not None and \
                hashlib.sha256(data).hexdigest() != self.manifest["files"][rel]:
            raise CheckpointError(path, "SHA-256 does not match the manifest (truncated or "
                                        "corrupted)")
        return data


__all__ = ["CHECKPOINT_EVENT", "CheckpointError", "PathLike", "RunDir", "Verified", "atomic_write",
           "atomic_write_bytes", "atomic_write_json", "atomic_write_text", "fsync_dir",
           "is_temp_file", "key_file", "sha256_file", "signing_key"]
