"""A checkpoint checked against its manifest (`Verified`), and the error of one that is refused."""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Dict, Optional

from ._atomic import PathLike


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
