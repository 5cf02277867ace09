"""Env-manager throughput against the bare gymnasium vector env it wraps.

For each configuration both run the same envs (CartPole-v1) with the same pre-generated random
actions, in the same process. They take turns in blocks of 20 vector steps (which goes first
alternates), each block timed on the wall clock, until each has made ``steps`` vector steps;
steps/s is the total over all blocks. Taking turns this finely gives both the same machine: on a
shared VM whose speed drifts by 10-20% from one second to the next, whole rounds one after the
other (best of N) moved the ratio by up to 0.1 between runs, the blocks by about 0.01. Steps are
env steps (vector steps x n_envs).

The bare env autoresets NEXT_STEP: after every episode end one of its rows is a pseudo-step
(reset obs, reward 0) that a learner must throw away. ``ratio`` compares raw steps/s;
``real ratio`` compares real transitions/s (the manager has no pseudo-steps).

``--atari``: instead, Pong with 8 envs and DQN preprocessing: bare EnvPool, EnvManager's envpool
mode and gymnasium's sync and async ale-py vector envs, in one run (``_atari_throughput``).

Run:  python benchmarks/env_throughput.py [--quick] [--repeats N] [--atari]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv

from rlpipe.envs import EnvManager

ENV_ID = "CartPole-v1"
# (mode, n_envs, vector steps per round)
CONFIGS = [("sync", 8, 4000), ("async", 2, 3000), ("async", 4, 2000), ("native", 8, 10000),
           ("native", 64, 5000), ("sync", 1, 15000), ("native", 1, 15000), ("sync", 64, 600)]


def bare_vector_env(mode: str, n_envs: int) -> gym.vector.VectorEnv:
    fns = [lambda: gym.make(ENV_ID) for _ in range(n_envs)]
    if mode == "sync":
        return SyncVectorEnv(fns)
    if mode == "async":
        return AsyncVectorEnv(fns)
    return gym.make_vec(ENV_ID, num_envs=n_envs, vectorization_mode="vector_entry_point")


BLOCK = 20  # vector steps per turn


def take_turns(a: Callable[[Any], Any], b: Callable[[Any], Any], actions: np.ndarray) -> tuple[
    float, float
]:
    """Steps/s of ``a`` and of ``b``, run in alternating blocks of the same actions."""
    clock = time.perf_counter
    spent = [0.0, 0.0]
    for k, start in enumerate(range(0, len(actions), BLOCK)):
        block = actions[start:start + BLOCK]
        order = ((0, a), (1, b)) if k % 2 == 0 else ((1, b), (0, a))
        for side, step in order:
            began = clock()
            for action in block:
                step(action)
            spent[side] += clock() - began
    return actions.size / spent[0], actions.size / spent[1]


def pseudo_fraction(bare: gym.vector.VectorEnv, actions: np.ndarray) -> float:
    """Share of the bare env's rows that are NEXT_STEP pseudo-steps (an untimed replay)."""
    bare.reset(seed=0)
    pending = np.zeros(actions.shape[1], dtype=bool)
    pseudo = 0
    for a in actions:
        pseudo += int(pending.sum())
        _, _, terminated, truncated, _ = bare.step(a)
        pending = terminated | truncated
    return pseudo / actions.size


def measure(mode: str, n_envs: int, steps: int, repeats: int) -> tuple[float, float, float]:
    """(bare steps/s, manager steps/s, share of the bare env's rows that are pseudo-steps)."""
    actions = np.random.default_rng(0).integers(0, 2, size=(steps, n_envs))
    bare = bare_vector_env(mode, n_envs)
    manager = EnvManager(ENV_ID, n_envs=n_envs, seed=0, mode=mode)
    try:
        pseudo = pseudo_fraction(bare, actions)
        manager.reset()
        take_turns(bare.step, manager.step, actions[: steps // 10])  # warm up both
        bare_rate = managed_rate = 0.0
        for _ in range(repeats):
            b, m = take_turns(bare.step, manager.step, actions)
            bare_rate, managed_rate = bare_rate + b / repeats, managed_rate + m / repeats
    finally:
        bare.close()
        manager.close()
    return bare_rate, managed_rate, pseudo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a quarter of the steps, 1 repeat")
    parser.add_argument("--repeats", type=int, default=3,
                        help="passes over the actions per configuration (steps/s is their mean)")
    parser.add_argument("--atari", action="store_true",
                        help="Pong, 8 envs: EnvPool, envpool mode, gymnasium sync/async instead")
    args = parser.parse_args()
    repeats = 1 if args.quick else args.repeats
    if args.atari:
        from _atari_throughput import report_atari

        report_atari(300 if args.quick else 1500, repeats)
        return
    print(f"{ENV_ID}, random actions; env steps/s, blocks of {BLOCK} vector steps taking turns, "
          f"{repeats} pass(es)")
    print(f"{'mode':<8}{'n_envs':>7}{'bare gymnasium':>16}{'EnvManager':>12}{'ratio':>8}"
          f"{'pseudo-steps':>14}{'real ratio':>12}")
    for mode, n_envs, steps in CONFIGS:
        steps = steps // 4 if args.quick else steps
        bare, managed, pseudo = measure(mode, n_envs, steps, repeats)
        print(f"{mode:<8}{n_envs:>7}{bare:>16,.0f}{managed:>12,.0f}{managed / bare:>8.2f}"
              f"{pseudo:>14.1%}{managed / (bare * (1 - pseudo)):>12.2f}")


if __name__ == "__main__":
    main()
