"""Env-manager throughput against the bare gymnasium vector env it wraps.

For each configuration both run the same envs (CartPole-v1) with the same pre-generated random
actions, in the same process, alternating rounds; the best round of each is kept. Sync and
native are timed in CPU time of this process (other load on the machine disturbs it less);
async in wall time (its work happens in the workers). Steps are env steps (vector steps x
n_envs).

The bare env autoresets NEXT_STEP: after every episode end one of its rows is a pseudo-step
(reset obs, reward 0) that a learner must throw away. ``ratio`` compares raw steps/s;
``real ratio`` compares real transitions/s (the manager has no pseudo-steps).

Run:  python benchmarks/env_throughput.py [--quick]
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
CONFIGS = [("sync", 8, 4000), ("async", 2, 2000), ("async", 4, 1500), ("native", 8, 6000),
           ("native", 64, 3000), ("sync", 1, 10000), ("native", 1, 10000), ("sync", 64, 500)]


def bare_vector_env(mode: str, n_envs: int) -> gym.vector.VectorEnv:
    fns = [lambda: gym.make(ENV_ID) for _ in range(n_envs)]
    if mode == "sync":
        return SyncVectorEnv(fns)
    if mode == "async":
        return AsyncVectorEnv(fns)
    return gym.make_vec(ENV_ID, num_envs=n_envs, vectorization_mode="vector_entry_point")


def time_loop(step: Callable[[Any], Any], actions: np.ndarray, clock: Callable[[], float]) -> float:
    start = clock()
    for a in actions:
        step(a)
    return actions.size / (clock() - start)


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


def measure(mode: str, n_envs: int, steps: int, rounds: int) -> tuple[float, float, float]:
    actions = np.random.default_rng(0).integers(0, 2, size=(steps, n_envs))
    clock = time.perf_counter if mode == "async" else time.process_time
    bare = bare_vector_env(mode, n_envs)
    manager = EnvManager(ENV_ID, n_envs=n_envs, seed=0, mode=mode)
    try:
        pseudo = pseudo_fraction(bare, actions)
        manager.reset()
        time_loop(bare.step, actions[: steps // 10], clock)  # warm up both
        time_loop(manager.step, actions[: steps // 10], clock)
        bare_best = manager_best = 0.0
        for _ in range(rounds):
            bare_best = max(bare_best, time_loop(bare.step, actions, clock))
            manager_best = max(manager_best, time_loop(manager.step, actions, clock))
    finally:
        bare.close()
        manager.close()
    return bare_best, manager_best, pseudo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rounds = 2 if args.quick else args.rounds
    print(f"{ENV_ID}, random actions; env steps/s, best of {rounds} alternating rounds")
    print(f"{'mode':<8}{'n_envs':>7}{'bare gymnasium':>16}{'EnvManager':>12}{'ratio':>8}"
          f"{'pseudo-steps':>14}{'real ratio':>12}")
    for mode, n_envs, steps in CONFIGS:
        steps = steps // 4 if args.quick else steps
        bare, managed, pseudo = measure(mode, n_envs, steps, rounds)
        print(f"{mode:<8}{n_envs:>7}{bare:>16,.0f}{managed:>12,.0f}{managed / bare:>8.2f}"
              f"{pseudo:>14.1%}{managed / (bare * (1 - pseudo)):>12.2f}")


if __name__ == "__main__":
    main()
