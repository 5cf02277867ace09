"""The layout of an action mask, shared by the env side (rlpipe.envs) and the policy side
(rlpipe.policies): one bool segment per action component, joined into one array."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np
from gymnasium import spaces

__all__ = ["empty_segments", "flat_mask", "mask_segments"]


def mask_segments(action_space: Any) -> Optional[List[int]]:
    """The segment sizes of a mask for `action_space`: ``[n]`` for Discrete(n), ``list(nvec)``
    for a 1-D MultiDiscrete; None for spaces that take no masks."""
    if isinstance(action_space, spaces.Discrete):
        return [int(action_space.n)]
    if isinstance(action_space, spaces.MultiDiscrete) and len(action_space.shape) == 1:
        return [int(n) for n in action_space.nvec]
    return None


def flat_mask(mask: Any, sizes: Sequence[int]) -> np.ndarray:
    """A mask as one bool array ``[rows, sum(sizes)]``: per-component masks (a tuple/list of
    ``[rows, n_i]``, or an object array of per-row tuples as gymnasium batches infos) are
    joined; an array passes as is (its shape is checked by the caller)."""
    if isinstance(mask, (tuple, list)) and len(mask) == len(sizes) and len(sizes) > 1:
        parts = [np.asarray(m, dtype=np.bool_) for m in mask]
        if all(p.ndim == 2 and p.shape[1] == n for p, n in zip(parts, sizes)):
            return np.concatenate(parts, axis=1)
    arr = np.asarray(mask)
    if arr.dtype == object and arr.ndim == 1 and len(sizes) > 1:
        width = int(sum(sizes))  # a row without a mask (None: an env that gave none) allows all
        return np.stack([np.ones(width, np.bool_) if row is None else
                         np.concatenate([np.asarray(c, dtype=np.bool_).reshape(-1) for c in row])
                         for row in arr])
    return arr.astype(np.bool_, copy=False)


def empty_segments(mask: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """bool ``[rows, len(sizes)]``: True where a row's segment allows no value."""
    if len(sizes) == 1:
        return ~mask.any(axis=1, keepdims=True)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return np.logical_or.reduceat(mask, starts, axis=1) == 0
