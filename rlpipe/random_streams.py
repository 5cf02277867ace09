"""Independent random streams derived from one run seed.

A run seeded `seed` seeds torch with `seed` (a policy's network init) and env `i` with
`seed + i` (gymnasium draws from numpy's `SeedSequence(seed + i)`). What else draws random
numbers (a policy's acting and learning, a replay buffer's sampling) gets a stream of its own:
`SeedSequence(seed)` with the stream in its spawn key, which no env and no other stream shares.

Seeding those generators with `seed` itself would replay numbers already used elsewhere: a torch
generator seeded `seed` draws, as PPO's first action samples, the very numbers that initialised
its network, and a NumPy generator seeded `seed` is env 0's own stream (docs/benchmarks.md, "One
seed, separate streams", measures what the first did to PPO on MiniGrid DoorKey).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch

__all__ = ["COLLECT", "LEARN", "REPLAY", "numpy_rng", "seed_or_draw", "stream_seed", "torch_rng"]

COLLECT, LEARN, REPLAY = 1, 2, 3  # acting (exploration), learning (minibatches, noise), sampling
_TAG = 0x726C70  # keeps these spawn keys apart from any other use of SeedSequence(seed)


def stream_seed(seed: int, stream: int) -> int:
    """A 63-bit seed for stream `stream` (COLLECT, LEARN, REPLAY) of a run seeded `seed`."""
    state = np.random.SeedSequence(int(seed), spawn_key=(_TAG, stream)).generate_state(
        1, np.uint64)
    return int(state[0] >> np.uint64(1))


def seed_or_draw(seed: Optional[int], rng: str = "torch") -> int:
    """`seed`, or when None a draw from torch's global RNG (`rng="torch"`) or NumPy's
    (`rng="numpy"`), so that a script seeded the DI-engine way (`set_pkg_seed(cfg.seed)`,
    seeding both, and nothing else) repeats."""
    if seed is not None:
        return int(seed)
    if rng == "numpy":
        return int(np.random.randint(2**62, dtype=np.int64))
    return int(torch.randint(2**62, ()).item())


def torch_rng(device: Any, seed: int, stream: int) -> torch.Generator:
    """A torch generator on `device` for stream `stream` of a run seeded `seed`."""
    return torch.Generator(device=device).manual_seed(stream_seed(seed, stream))


def numpy_rng(seed: int, stream: int) -> np.random.Generator:
    """A NumPy generator for stream `stream` of a run seeded `seed`."""
    return np.random.default_rng(stream_seed(seed, stream))
