"""Batched observations: plain arrays, or nested dicts of stacked arrays for Dict/Tuple spaces.

A Tuple observation becomes a dict with keys ``"0"``, ``"1"``, ... so that every nested batch
has the same shape (a tree of dicts whose leaves are arrays with a leading ``n_envs`` dim).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Union

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import concatenate, create_empty_array

__all__ = ["BatchObs", "check_space", "obs_to_tree"]

BatchObs = Union[np.ndarray, dict[str, "BatchObs"]]

_LEAF_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


def check_space(space: spaces.Space, what: str) -> None:
    """Raise ``TypeError`` for a space the env manager cannot batch into arrays."""
    if isinstance(space, _LEAF_SPACES):
        return
    if isinstance(space, spaces.Dict):
        for key, sub in space.spaces.items():
            check_space(sub, f"{what}[{key!r}]")
        return
    if isinstance(space, spaces.Tuple):
        for i, sub in enumerate(space.spaces):
            check_space(sub, f"{what}[{i}]")
        return
    raise TypeError(
        f"{what} is a {type(space).__name__}, which rlpipe.envs does not batch; supported spaces "
        f"are Box, Discrete, MultiDiscrete, MultiBinary and Dict/Tuple of those. Wrap the env to "
        f"convert its {what} (e.g. gymnasium.wrappers.FlattenObservation)."
    )


def is_nested(space: spaces.Space) -> bool:
    return isinstance(space, (spaces.Dict, spaces.Tuple))


def to_batch(obs: Any) -> BatchObs:
    """Vector-env output -> our layout (tuples become dicts with string keys). Arrays pass as is."""
    if isinstance(obs, np.ndarray):
        return obs
    if isinstance(obs, dict):
        return {k: to_batch(v) for k, v in obs.items()}
    if isinstance(obs, tuple):
        return {str(i): to_batch(v) for i, v in enumerate(obs)}
    return np.asarray(obs)


class BatchStacker:
    """Stacks ``n`` single-env observations of ``space`` into our batch layout (picklable).

    ``stacker(items)`` equals ``to_batch(concatenate(space, items, create_empty_array(space,
    n)))`` — one fresh array per leaf, of the leaf space's dtype — but the walk over the space
    is planned once here: per step there is one ``np.array`` per leaf and one dict per nesting
    level, not gymnasium's single-dispatch over the space, its empty-array tree and our re-keying
    of it (the cost of Dict observations in the sync loop, benchmarks/dict_obs_throughput.py).
    """

    __slots__ = ("plan",)

    def __init__(self, space: spaces.Space, n: int) -> None:
        self.plan = _plan(space, n)

    def __call__(self, items: Sequence[Any]) -> BatchObs:
        return _run(self.plan, items)

    def __getstate__(self) -> tuple:
        return self.plan

    def __setstate__(self, plan: tuple) -> None:
        self.plan = plan


def _plan(space: spaces.Space, n: int) -> tuple:
    """("node", ((out key, item key, subplan), ...)) | ("leaf", shape, dtype) | ("other", ...)."""
    if isinstance(space, spaces.Dict):
        return ("node", tuple((k, k, _plan(sub, n)) for k, sub in space.spaces.items()))
    if isinstance(space, spaces.Tuple):
        return ("node", tuple((str(i), i, _plan(sub, n)) for i, sub in enumerate(space.spaces)))
    if isinstance(space, _LEAF_SPACES):
        return ("leaf", (n, *space.shape), space.dtype)
    return ("other", space, n)


def _run(plan: tuple, items: Sequence[Any]) -> BatchObs:
    kind = plan[0]
    if kind == "leaf":
        # np.array of the list: a fresh array, as np.stack into a new one gives, at a third of
        # its cost for 8 small arrays (a tenth for scalars); the dtype and the shape are then
        # checked as np.stack's `out=` would (same_kind casting, one row per item)
        try:
            batch = np.array(items)
        except ValueError:  # items of different shapes
            batch = None
        if batch is not None and batch.dtype != plan[2]:
            batch = batch.astype(plan[2], casting="same_kind")
        if batch is None or batch.shape != plan[1]:
            shapes = sorted({np.shape(item) for item in items})
            raise ValueError(f"observations of {len(items)} envs do not stack into a part of "
                             f"shape {plan[1][1:]} of the observation space: their shapes are "
                             f"{shapes}; make the env return observations of its space")
        return batch
    if kind == "node":
        return {key: _run(sub, [item[i] for item in items]) for key, i, sub in plan[1]}
    space, n = plan[1], plan[2]
    return to_batch(concatenate(space, items, create_empty_array(space, n=n)))


def copy_batch(obs: BatchObs) -> BatchObs:
    if isinstance(obs, np.ndarray):
        return obs.copy()
    return {k: copy_batch(v) for k, v in obs.items()}


def set_rows(batch: BatchObs, rows: np.ndarray, values: Sequence[Any]) -> None:
    """Write single-env observations ``values[j]`` into row ``rows[j]`` of ``batch`` (in place)."""
    if isinstance(batch, np.ndarray):
        for row, value in zip(rows, values):
            batch[row] = value
        return
    for key, sub in batch.items():
        set_rows(sub, rows, [_child(v, key) for v in values])


def equal_rows(a: BatchObs, b: BatchObs, rows: np.ndarray) -> bool:
    if isinstance(a, np.ndarray):
        other = b[rows]  # type: ignore[index]
        return bool(np.array_equal(a[rows], other, equal_nan=a.dtype.kind == "f"))
    return all(equal_rows(a[k], b[k], rows) for k in a)  # type: ignore[index]


def _child(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        return value[key]
    return value[int(key)]


def obs_to_tree(obs: BatchObs, device: Any = None) -> Any:
    """Batched observation -> torch: a tensor for an array, a ``treetensor.torch.Tensor`` for a
    nested dict.

    Built from the already stacked arrays (``torch.from_numpy`` on each leaf, then one tree):
    cheap — a few microseconds per leaf — unlike building trees per env or per step from dicts
    of lists. ``device`` moves the leaves (e.g. ``"cuda"``); by default they share memory with
    the numpy arrays.
    """
    import torch

    if isinstance(obs, np.ndarray):
        tensor = torch.from_numpy(obs)
        return tensor if device is None else tensor.to(device)
    import treetensor.torch as ttorch
    from treevalue import TreeValue
    from treevalue.tree.common import create_storage

    def leaves(node: BatchObs) -> Any:
        if isinstance(node, np.ndarray):
            tensor = torch.from_numpy(node)
            return tensor if device is None else tensor.to(device)
        return {k: leaves(v) for k, v in node.items()}

    return ttorch.Tensor(TreeValue(create_storage(leaves(obs))))
