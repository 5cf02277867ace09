"""Observations as torch tensors: arrays, or nested dicts of arrays (Dict/Tuple spaces)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Union

import numpy as np
import torch

Device = Union[str, torch.device]
_CPU = torch.device("cpu")


def obs_as_tensor(obs: Any, device: Device) -> Any:
    """An array → a tensor on `device`; a (nested) mapping of arrays → the same dict of tensors.
    Tensors are moved, never copied when already there; arrays for the CPU share their memory."""
    if type(obs) is np.ndarray:  # the common leaf first: no ABC checks per key per step
        if device == _CPU:  # what as_tensor does there (same errors and warnings), for less
            return torch.from_numpy(obs)
        return torch.as_tensor(obs, device=device)
    if type(obs) is dict or isinstance(obs, Mapping):
        return {k: obs_as_tensor(v, device) for k, v in obs.items()}
    if isinstance(obs, torch.Tensor):
        return obs.to(device)
    return torch.as_tensor(np.asarray(obs), device=device)


def batch_rows(obs: Any) -> int:
    """The leading (batch) size of an observation batch, nested or not."""
    while type(obs) is dict or isinstance(obs, Mapping):
        obs = next(iter(obs.values()))
    return int(np.shape(obs)[0])
