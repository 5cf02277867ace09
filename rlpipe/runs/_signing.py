"""The per-user signing key of checkpoint manifests and the HMAC-SHA256 signature.

A manifest is signed with this user's key (`key_file()`), so a run folder handed over by someone
else is refused before anything in it is unpickled, unless the user trusts it.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any, Mapping

from ._atomic import fsync_dir, temp_name

KEY_ENV = "RLPIPE_KEY_FILE"


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
        tmp = path.parent / temp_name(path.name)
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


def signature(manifest: Mapping[str, Any], key: bytes) -> str:
    body = {k: v for k, v in manifest.items() if k != "signature"}
    blob = json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return hmac.new(key, blob, hashlib.sha256).hexdigest()
