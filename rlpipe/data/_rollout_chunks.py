"""Chunks of a time-ordered rollout for recurrent on-policy learning (truncated BPTT)."""
from __future__ import annotations

from typing import Any, Dict, Iterator, Mapping, Union

import numpy as np
import torch

from ._tree import Path, path_name, unflatten

_NOT_PER_STEP = ("next_obs", "next_value", "valid", "state")


def rollout_chunks(arrays: Mapping[Path, np.ndarray], n_steps: int, n_envs: int, chunk_len: int
                   ) -> Dict[Path, np.ndarray]:
    """Every env's time line [0, n_steps) cut into consecutive chunks of `chunk_len` steps (the
    last one padded): per-step fields [C, chunk_len, ...], `state` [C, ...] (the recorded state
    at each chunk's first step), `first` and `mask` [C, chunk_len]; C = n_envs * chunks per env,
    env-major (chunk c of env e is row e * chunks + c)."""
    owner = "RolloutStorage.sequence_minibatches"
    for key in ("first", "state"):
        if not any(p[0] == key for p in arrays):
            raise KeyError(f"{owner}: the rollout lacks {key!r} (it has "
                           f"{sorted({path_name(p) for p in arrays})}); the acting path records "
                           "first and state for a recurrent policy (recurrent = True)")
    per_env = -(-n_steps // chunk_len)
    padded = per_env * chunk_len
    starts = np.arange(per_env) * chunk_len  # chunk start times

    def chunked(arr: np.ndarray) -> np.ndarray:
        """[n_steps, n_envs, ...] -> [n_envs * per_env, chunk_len, ...], padding zeroed."""
        arr = np.swapaxes(arr[:n_steps], 0, 1)  # [n_envs, n_steps, ...]
        if padded > n_steps:
            pad = np.zeros((n_envs, padded - n_steps) + arr.shape[2:], arr.dtype)
            arr = np.concatenate([arr, pad], axis=1)
        return arr.reshape((n_envs * per_env, chunk_len) + arr.shape[2:])

    out: Dict[Path, np.ndarray] = {}
    for path, arr in arrays.items():
        if path[0] == "state":
            out[path] = np.swapaxes(arr[starts], 0, 1).reshape((n_envs * per_env,) + arr.shape[2:])
        elif path[0] not in _NOT_PER_STEP:
            out[path] = chunked(arr)
    real = np.ones((n_steps, n_envs), bool)
    if ("valid",) in arrays:
        real &= arrays[("valid",)][:n_steps].reshape(n_steps, n_envs).astype(bool)
    out[("mask",)] = chunked(real)
    out[("first",)] = out[("first",)].astype(bool)
    return out


def chunk_minibatches(chunks: Mapping[Path, Any], n_minibatches: int,
                      rng: Union[np.random.Generator, int, None]) -> Iterator[Dict[str, Any]]:
    """The chunks shuffled and split into `n_minibatches` minibatches of whole chunks (sizes
    differ by one at most), each a nested dict of [B, chunk_len, ...] arrays and `state` [B, ...]
    (tensors where the chunks are tensors)."""
    n_chunks = chunks[("mask",)].shape[0]
    if isinstance(n_minibatches, bool) or not isinstance(n_minibatches, (int, np.integer)) \
            or not 1 <= n_minibatches <= n_chunks:
        raise ValueError(f"RolloutStorage.sequence_minibatches: n_minibatches must be an int in "
                         f"[1, {n_chunks}] (the rollout has {n_chunks} chunks), got {n_minibatches!r}; "
                         "use fewer minibatches or a shorter chunk_len")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    mask = chunks[("mask",)]
    for pick in np.array_split(gen.permutation(n_chunks), int(n_minibatches)):
        # chunks already converted to tensors take the index as one tensor (one conversion, not
        # one for each key)
        index = torch.from_numpy(pick).to(mask.device) if isinstance(mask, torch.Tensor) else pick
        yield unflatten({p: arr[index] for p, arr in chunks.items()})
