"""Nested dicts of arrays: flatten to `{path: array}` and back, name paths in messages."""
from __future__ import annotations

from collections.abc import Mapping  # isinstance on it: ~0.2 us, typing.Mapping ~0.7 us
from typing import Any, Callable, Dict, Tuple

import numpy as np

Path = Tuple[str, ...]


def flatten(tree: Mapping[str, Any], prefix: Path = ()) -> Dict[Path, Any]:
    """`{"obs": {"pos": a}, "reward": r}` -> `{("obs", "pos"): a, ("reward",): r}`.

    Leaves are whatever is not a mapping; an empty mapping is kept as no leaf at all.
    """
    flat: Dict[Path, Any] = {}
    for key, value in tree.items():
        if not isinstance(key, str):
            raise TypeError(
                f"key {key!r} at {path_name(prefix) or 'the top level'} is a {type(key).__name__}; "
                "batches use string keys (a Tuple observation becomes a dict with keys '0', '1', ...)"
            )
        path = prefix + (key,)
        if isinstance(value, Mapping):
            flat.update(flatten(value, path))
        else:
            flat[path] = value
    return flat


def unflatten(flat: Mapping[Path, Any]) -> Dict[str, Any]:
    """Inverse of `flatten`."""
    tree: Dict[str, Any] = {}
    for path, value in flat.items():
        node = tree
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return tree


def map_leaves(fn: Callable[[Any], Any], tree: Mapping[str, Any]) -> Dict[str, Any]:
    """Apply `fn` to every leaf of a nested dict, keeping the structure."""
    return {k: map_leaves(fn, v) if isinstance(v, Mapping) else fn(v) for k, v in tree.items()}


def path_name(path: Path) -> str:
    """("obs", "pos") -> "obs/pos" (for messages)."""
    return "/".join(path)


def as_rows(flat: Mapping[Path, Any], owner: str) -> Tuple[Dict[Path, np.ndarray], int]:
    """Convert every leaf to an array with a leading batch dim; return them and that dim.

    Raises a ValueError naming the key when a leaf is a scalar or the leading dims disagree.
    """
    arrays: Dict[Path, np.ndarray] = {}
    rows = None
    first = None
    for path, value in flat.items():
        arr = np.asarray(value)
        if arr.ndim == 0:
            raise ValueError(
                f"{owner}: key {path_name(path)!r} is a scalar; every value needs a leading batch "
                "dim (one row per transition): wrap a single transition as x[None] or [x]"
            )
        if arr.dtype == object:
            raise TypeError(
                f"{owner}: key {path_name(path)!r} has dtype object; store numeric (or fixed-width "
                "string) arrays only, e.g. np.asarray(x, dtype=np.float32)"
            )
        if rows is None:
            rows, first = arr.shape[0], path
        elif arr.shape[0] != rows:
            raise ValueError(
                f"{owner}: key {path_name(path)!r} has {arr.shape[0]} rows but key "
                f"{path_name(first)!r} has {rows}; all values need the same leading batch dim"
            )
        arrays[path] = arr
    if rows is None:
        raise ValueError(f"{owner}: the batch has no keys; push a dict of arrays such as "
                         "{'obs': ..., 'action': ..., 'reward': ...}")
    return arrays, rows
