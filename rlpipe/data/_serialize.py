"""Write a state dict (nested dicts of JSON values and numpy arrays) to one .npz file and back.

Arrays go into the archive as `a0, a1, ...`; everything else goes into a JSON header that
records where each array sits. No pickle: files load with `allow_pickle=False`.
"""
from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Dict, List

import numpy as np

_HEADER = "__rlpipe_state__"


def _split(node: Any, arrays: List[np.ndarray]) -> Any:
    if isinstance(node, np.ndarray):
        arrays.append(node)
        return {"__array__": len(arrays) - 1}
    if isinstance(node, dict):
        return {k: _split(v, arrays) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [_split(v, arrays) for v in node]
    if isinstance(node, np.generic):
        return node.item()
    return node


def _join(node: Any, archive: Any) -> Any:
    if isinstance(node, dict):
        if set(node) == {"__array__"}:
            return archive[f"a{node['__array__']}"]
        return {k: _join(v, archive) for k, v in node.items()}
    if isinstance(node, list):
        return [_join(v, archive) for v in node]
    return node


def save_state(state: Dict[str, Any], path: str) -> None:
    """Write atomically: a temp file in the same folder, then `os.replace`."""
    arrays: List[np.ndarray] = []
    header = json.dumps(_split(state, arrays))
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **{_HEADER: np.array(header)}, **{f"a{i}": a for i, a in enumerate(arrays)})
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_state(path: str) -> Dict[str, Any]:
    with np.load(path, allow_pickle=False) as archive:
        if _HEADER not in archive.files:
            raise ValueError(f"{path!r} is not an rlpipe state file (no {_HEADER} entry); it was not "
                             "written by ReplayBuffer.save")
        header = json.loads(str(archive[_HEADER]))
        return _join(header, {name: archive[name] for name in archive.files})
