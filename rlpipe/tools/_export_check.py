"""The check `rlpipe export` runs on the file it wrote: observations to compare on, and the
comparison of the file's actions with the policy's eval face.

Observations: `n` sampled from the observation space (a Box part uniform within its bounds where
they are finite and at most 1e6 wide, else a standard normal clipped to them) and those of a
few env steps; masks, where the file takes one, random with at least one valid action per
segment (and the env's own masks on its steps). Discrete actions must be equal; continuous
ones within `atol` (1e-5), else `ExportError` names the largest difference and a row.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

import gymnasium as gym
import numpy as np

from rlpipe.middleware import make_acting

from ._export_face import MASK_INPUT, ExportError, InputSpec

Runner = Callable[[Dict[str, np.ndarray]], np.ndarray]


def _leaf_space(space: gym.Space, path: Sequence[str]) -> gym.Space:
    for key in path:
        space = space[key] if isinstance(space, gym.spaces.Dict) else space[int(key)]
    return space


def _sample_box(space: gym.spaces.Box, n: int, rng: np.random.Generator) -> np.ndarray:
    low = np.broadcast_to(space.low, space.shape).astype(np.float64)
    high = np.broadcast_to(space.high, space.shape).astype(np.float64)
    if np.issubdtype(space.dtype, np.integer):
        return rng.integers(low, high, size=(n, *space.shape), endpoint=True).astype(space.dtype)
    bounded = np.isfinite(low) & np.isfinite(high) & (high - low <= 1e6)
    uniform = rng.uniform(np.where(bounded, low, 0.0), np.where(bounded, high, 1.0),
                          (n, *space.shape))
    normal = np.clip(rng.standard_normal((n, *space.shape)), low, high)
    return np.where(bounded, uniform, normal).astype(space.dtype)


def _sample_leaf(space: gym.Space, n: int, rng: np.random.Generator) -> np.ndarray:
    if isinstance(space, gym.spaces.Box):
        return _sample_box(space, n, rng)
    if isinstance(space, gym.spaces.Discrete):
        return rng.integers(space.n, size=n) + int(space.start)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return rng.integers(space.nvec, size=(n, *space.nvec.shape)) + np.asarray(space.start)
    if isinstance(space, gym.spaces.MultiBinary):
        return rng.integers(2, size=(n, *space.shape)).astype(space.dtype)
    raise ExportError(f"rlpipe export cannot sample observations of {space!r} to check the file "
                      f"(it samples Box, Discrete, MultiDiscrete and MultiBinary parts)")


def sample_inputs(obs_space: gym.Space, specs: List[InputSpec], n: int, seed: int
                  ) -> Dict[str, np.ndarray]:
    """`n` observations of `obs_space` as the file's inputs (by name)."""
    rng = np.random.default_rng(seed)
    return {s.name: _sample_leaf(_leaf_space(obs_space, s.path), n, rng).astype(s.dtype)
            for s in specs}


def sample_masks(sizes: Sequence[int], n: int, seed: int) -> np.ndarray:
    """`n` random masks [n, sum(sizes)], each segment allowing at least one value."""
    rng = np.random.default_rng(seed)
    parts = []
    for size in sizes:
        part = rng.random((n, size)) < 0.5
        part[np.arange(n), rng.integers(size, size=n)] = True
        parts.append(part)
    return np.concatenate(parts, axis=1)


def env_inputs(env: Any, policy: Any, specs: List[InputSpec], steps: int,
               with_mask: bool) -> Dict[str, np.ndarray]:
    """The observations (and masks) of `steps` steps of `env` acted on by the policy's eval
    face through the acting path (`make_acting`: the envs are reset first), as the file's
    inputs."""
    acting = make_acting(policy.eval_mode, env)
    rows: List[Dict[str, np.ndarray]] = []
    for _ in range(steps):
        step, _ = acting.play_step()
        row = {s.name: np.asarray(_pick(step["obs"], s.path)).astype(s.dtype) for s in specs}
        if with_mask:
            row[MASK_INPUT] = np.asarray(step.get("action_mask"), np.bool_)
        rows.append(row)
    return {name: np.concatenate([r[name] for r in rows]) for name in rows[0]}


def _pick(obs: Any, path: Sequence[str]) -> Any:
    for key in path:
        obs = obs[key]
    return obs


def policy_obs(inputs: Dict[str, np.ndarray], specs: List[InputSpec]) -> Any:
    """The file's inputs as the observation batch the policy's eval face takes."""
    if len(specs) == 1 and not specs[0].path:
        return inputs[specs[0].name]
    obs: Dict[str, Any] = {}
    for s in specs:
        node = obs
        for key in s.path[:-1]:
            node = node.setdefault(key, {})
        node[s.path[-1]] = inputs[s.name]
    return obs


def compare(policy: Any, run_file: Runner, inputs: Dict[str, np.ndarray],
            specs: List[InputSpec], discrete: bool, atol: float, what: str) -> float:
    """The largest |file − policy| over `inputs` (0 for equal discrete actions); an
    `ExportError` naming it and the first bad row when the actions differ."""
    mask: Optional[np.ndarray] = inputs.get(MASK_INPUT)
    kwargs = {} if mask is None else {"action_mask": mask}
    expected = np.asarray(policy.eval_mode.forward(policy_obs(inputs, specs), **kwargs)["action"])
    got = np.asarray(run_file(inputs))
    if got.shape != expected.shape:
        raise ExportError(f"the exported file gives actions of shape {got.shape} on {what}, the "
                          f"policy {expected.shape}; the export is wrong (a bug: please report)")
    diff = np.abs(got.astype(np.float64) - expected.astype(np.float64))
    diff = diff.reshape(len(diff), -1).max(axis=1) if diff.ndim > 1 else diff
    worst = float(diff.max()) if diff.size else 0.0
    bad = diff > (0.0 if discrete else atol)
    if bad.any():
        row = int(np.argmax(diff))
        kind = (f"{int(bad.sum())} of {len(bad)} discrete actions differ" if discrete else
                f"continuous actions differ by up to {worst:.3g} (> {atol:g}) in "
                f"{int(bad.sum())} of {len(bad)} rows")
        raise ExportError(f"the exported file does not act as the policy on {what}: {kind}; "
                          f"max difference {worst:.3g}, e.g. row {row}: file {got[row]!r}, "
                          f"policy {expected[row]!r}. The file was not kept")
    if mask is not None and discrete:
        _check_masked(got, mask, policy.action_space)
    return worst


def _check_masked(got: np.ndarray, mask: np.ndarray, space: Any) -> None:
    """Every chosen action is allowed by its mask (values relative to the space's start)."""
    start = np.asarray(space.start, np.int64)
    index = (got.astype(np.int64) - start).reshape(len(got), -1)
    sizes = [int(space.n)] if isinstance(space, gym.spaces.Discrete) else list(space.nvec)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    chosen = np.take_along_axis(mask, index + offsets, axis=1)
    if not chosen.all():
        row = int(np.argwhere(~chosen)[0][0])
        raise ExportError(f"the exported file chose a masked action at row {row}: {got[row]!r} "
                          f"with mask {mask[row].astype(int).tolist()}. The file was not kept")
