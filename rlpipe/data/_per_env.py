"""`PerEnvOutput`: a batched policy output seen as a mapping env id → that env's output dict."""
from __future__ import annotations

from typing import Any, Dict, Iterator, Mapping

import numpy as np


def _row(value: Any, i: int) -> Any:
    if isinstance(value, Mapping):
        return {k: _row(v, i) for k, v in value.items()}
    return value[i]


class PerEnvOutput(Mapping):
    """What `inferencer` writes to `ctx.inference_output`, typed as DI-engine types it
    (`Dict[int, Dict]`): `out[env_id]` is that env's output dict (`{"action": ..., "logp": ...}`).

    A light view: rows are sliced on access, nothing is copied up front. The batched dict the
    policy returned (each value with a leading env dimension) stays reachable as `out.batch`,
    which the collector's fast path uses. Any dict of per-env arrays can be viewed so: the
    `EpisodeCollector` splits a step record over all envs into per-env rows with it.
    """

    __slots__ = ("batch", "_n")

    def __init__(self, batch: Mapping[str, Any], n_envs: int) -> None:
        self.batch = batch
        self._n = int(n_envs)

    def __getitem__(self, env_id: int) -> Dict[str, Any]:
        if isinstance(env_id, (bool, np.bool_)) or not isinstance(env_id, (int, np.integer)):
            raise KeyError(f"inference_output is keyed by env id (an int in [0, {self._n})), "
                           f"got {env_id!r}; the batched arrays are in inference_output.batch")
        if not 0 <= env_id < self._n:
            raise KeyError(f"inference_output has envs 0..{self._n - 1}, no env {env_id}")
        return {k: _row(v, int(env_id)) for k, v in self.batch.items()}

    def __iter__(self) -> Iterator[int]:
        return iter(range(self._n))

    def __len__(self) -> int:
        return self._n

    def __repr__(self) -> str:
        return f"PerEnvOutput({self._n} envs, keys {sorted(self.batch)})"


def batch_of(output: Any) -> Mapping[str, Any]:
    """The batched dict behind an inference output: `.batch` of a `PerEnvOutput`; a plain
    mapping env id → dict (written by hand) stacked key by key; any other mapping as it is."""
    if output is None:
        return {}
    if isinstance(output, PerEnvOutput):
        return output.batch
    if isinstance(output, Mapping) and output and all(
            isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in output):
        rows = [output[k] for k in sorted(output)]
        return {key: _stack([r[key] for r in rows]) for key in rows[0]}
    return output


def _stack(values: list) -> Any:
    if isinstance(values[0], Mapping):
        return {k: _stack([v[k] for v in values]) for k in values[0]}
    return np.stack([np.asarray(v) for v in values])
