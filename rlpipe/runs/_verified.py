"""A checkpoint checked against its manifest (`Verified`), and the error of one that is refused."""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from ._atomic import PathLike, sha256_file


class CheckpointError(ValueError):
    """A checkpoint (or one of its files) that must not be loaded; the message names the file."""

    def __init__(self, path: PathLike, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = Path(path)
        self.reason = reason


class Verified:
    """A checkpoint whose manifest passed `RunDir.verify`; `read(rel)` returns a listed file's
    bytes after checking them against the manifest (so what is loaded is what was checked)."""

    def __init__(self, run: Any, checkpoint: str, manifest: Optional[Dict[str, Any]]) -> None:
        """`run`: the `RunDir` holding the checkpoint (its `ckpt` folder and `manifest()`)."""
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
        """Raise CheckpointError naming the file unless it exists and matches its hash (read
        in chunks: a replay buffer's file can be gigabytes)."""
        self.checked_path(rel)

    def checked_path(self, rel: str) -> Path:
        """The path of `ckpt/<rel>` once its bytes, read in chunks, match the manifest. Only
        for files loaded without unpickling (a replay buffer's .npz): what is read later is not
        the bytes checked here, so a file swapped in between could be wrong, never run code."""
        path = self._listed(rel)
        self._compare(path, rel, self._io(path, sha256_file))
        return path

    def read(self, rel: str) -> bytes:
        """The bytes of `ckpt/<rel>`, checked against the manifest (unchecked when it has none);
        what is loaded is what was checked."""
        path = self._listed(rel)
        data = self._io(path, Path.read_bytes)
        self._compare(path, rel, hashlib.sha256(data).hexdigest())
        return data

    def _listed(self, rel: str) -> Path:
        path = self._path(rel)
        if self.manifest is not None and rel not in self.manifest["files"]:
            raise CheckpointError(path, f"not listed in the manifest of {self.checkpoint}")
        return path

    def _io(self, path: Path, how: Callable[[Path], Any]) -> Any:
        try:
            return how(path)
        except FileNotFoundError as err:
            raise CheckpointError(path, f"missing (pruned or deleted); checkpoint "
                                        f"{self.checkpoint} cannot be used") from err
        except OSError as err:
            raise CheckpointError(path, f"cannot read it ({err})") from err

    def _compare(self, path: Path, rel: str, digest: str) -> None:
        if self.manifest is not None and digest != self.manifest["files"][rel]:
            raise CheckpointError(path, "SHA-256 does not match the manifest (truncated or "
                                        "corrupted)")
