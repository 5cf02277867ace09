"""Reading dotted settings from a run config (EasyDict or plain dict) with clear errors."""
from __future__ import annotations

from typing import Any, Mapping

_MISSING = object()


def setting(cfg: Any, dotted: str, default: Any = _MISSING) -> Any:
    """`setting(cfg, "policy.learn.batch_size", 64)`: the value at a dotted path of `cfg`.

    Without a default, a missing key is an error naming the full path and what to add.
    """
    node = cfg
    walked = []
    for part in dotted.split("."):
        walked.append(part)
        if isinstance(node, Mapping) and part in node:
            node = node[part]
            continue
        if default is not _MISSING:
            return default
        raise KeyError(
            f"config has no '{'.'.join(walked)}' (needed as '{dotted}'); add it to the run "
            f"config or pass --set {dotted}=VALUE"
        )
    return node
