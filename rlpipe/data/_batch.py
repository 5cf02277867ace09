"""`to_torch`: a batch of numpy arrays to torch tensors (nested observations as treetensor)."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Union

import numpy as np
import torch

Device = Union[str, torch.device]


def _tensor(value: Any, device: Device, key: str) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    arr = np.asarray(value)
    if arr.dtype.kind not in "biufc":
        raise TypeError(f"to_torch: key {key!r} has dtype {arr.dtype}, which torch cannot hold; "
                        "drop it from the batch or convert it to numbers first")
    if not arr.flags.writeable:  # torch.from_numpy warns on read-only arrays
        arr = arr.copy()
    return torch.from_numpy(np.ascontiguousarray(arr)).to(device)


def _nested(tree: Mapping[str, Any], device: Device, prefix: str) -> Dict[str, Any]:
    return {k: _nested(v, device, f"{prefix}/{k}") if isinstance(v, Mapping) else _tensor(v, device, f"{prefix}/{k}")
            for k, v in tree.items()}


def to_torch(batch: Mapping[str, Any], device: Device = "cpu") -> Dict[str, Any]:
    """Convert a batch (dict of arrays with a leading batch dim) to a dict of torch tensors.

    A nested value (e.g. a Dict observation) becomes one `treetensor.torch.Tensor` tree built
    from the already stacked arrays, so the cost does not grow with the batch size.
    Integer and bool arrays keep their dtype (actions stay int64, flags stay bool).
    """
    out: Dict[str, Any] = {}
    for key, value in batch.items():
        if isinstance(value, Mapping):
            import treetensor.torch as ttorch  # heavy import, only when a batch is nested
            from treevalue.tree.common import create_storage

            out[key] = ttorch.Tensor(create_storage(_nested(value, device, key)))
        else:
            out[key] = _tensor(value, device, key)
    return out
