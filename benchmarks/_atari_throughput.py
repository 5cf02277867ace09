"""Pong, 8 envs, DQN preprocessing: bare EnvPool, EnvManager(mode="envpool"), and gymnasium's sync
and async (subprocess) vector envs of ale-py, in one run (``env_throughput.py --atari``).

The gymnasium envs use rlpipe's ale-py preprocessing (``make_atari``: ALE skips 4 frames and
greys them itself, 84x84 by block means, a stack of 4), because gymnasium's AtariPreprocessing
needs OpenCV, which is not installed here; it is the cheaper of the two (ALE's frame skip runs in
C++), so the gymnasium numbers are if anything flattering. Sticky actions are off everywhere
(EnvPool's default). All four take turns in blocks of vector steps with the same random actions,
as in the CartPole part, so a drifting machine slows them alike. Steps are env steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

GAME, TASK, N_ENVS, BLOCK = "ALE/Pong-v5", "Pong-v5", 8, 25


def _contenders(n_envs: int) -> dict[str, tuple[Callable[[np.ndarray], Any], Callable[[], None]]]:
    import envpool
    import gymnasium as gym
    from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv

    from rlpipe.envs import EnvManager
    from rlpipe.envs._atari import make_atari
    from rlpipe.envs._envpool import ATARI_PRESETS

    bare = envpool.make(TASK, env_type="gymnasium", num_envs=n_envs, seed=0,
                        **ATARI_PRESETS["eval"])
    bare.reset()
    manager = EnvManager(GAME, n_envs=n_envs, seed=0, mode="envpool")
    manager.reset()
    fns = [lambda: make_atari(GAME, repeat_action_probability=0.0) for _ in range(n_envs)]
    sync_env: gym.vector.VectorEnv = SyncVectorEnv(fns)
    async_env: gym.vector.VectorEnv = AsyncVectorEnv(fns)
    sync_env.reset(seed=0)
    async_env.reset(seed=0)
    return {
        "bare EnvPool": (lambda a: bare.step(a.astype(np.int32)), bare.close),
        "EnvManager envpool": (manager.step, manager.close),
        "gymnasium sync": (sync_env.step, sync_env.close),
        "gymnasium async": (async_env.step, async_env.close),
    }


def _round_robin(steps: dict[str, Callable[[np.ndarray], Any]], actions: np.ndarray
                 ) -> dict[str, float]:
    """Env steps/s of each contender, all stepping the same actions in turns of BLOCK."""
    clock = time.perf_counter
    names = list(steps)
    spent = dict.fromkeys(names, 0.0)
    for k, start in enumerate(range(0, len(actions), BLOCK)):
        block = actions[start:start + BLOCK]
        for name in names[k % len(names):] + names[:k % len(names)]:  # rotate who goes first
            step = steps[name]
            began = clock()
            for action in block:
                step(action)
            spent[name] += clock() - began
    return {name: actions.size / spent[name] for name in names}


def measure_atari(vector_steps: int, repeats: int, n_envs: int = N_ENVS) -> dict[str, float]:
    contenders = _contenders(n_envs)
    steps = {name: step for name, (step, _) in contenders.items()}
    actions = np.random.default_rng(0).integers(0, 6, size=(vector_steps, n_envs))
    try:
        _round_robin(steps, actions[: max(BLOCK, vector_steps // 10)])  # warm up
        rates = dict.fromkeys(steps, 0.0)
        for _ in range(repeats):
            for name, rate in _round_robin(steps, actions).items():
                rates[name] += rate / repeats
    finally:
        for _, close in contenders.values():
            close()
    return rates


def report_atari(vector_steps: int, repeats: int) -> None:
    import envpool

    threads = envpool.make_spec(TASK, num_envs=N_ENVS).config.num_threads
    print(f"\n{GAME}, {N_ENVS} envs, DQN preprocessing, random actions; env steps/s, blocks of "
          f"{BLOCK} vector steps taking turns, {repeats} pass(es); EnvPool num_threads="
          f"{threads} (0: its default)")
    rates = measure_atari(vector_steps, repeats)
    mode, bare = rates["EnvManager envpool"], rates["bare EnvPool"]
    for name, rate in rates.items():
        print(f"{name:<20}{rate:>10,.0f}{'':>4}EnvManager envpool / this = {mode / rate:.2f}")
    bars = [("EnvManager envpool / bare EnvPool", mode / bare, 0.95),
            ("EnvManager envpool / gymnasium sync", mode / rates["gymnasium sync"], 1.5),
            ("EnvManager envpool / gymnasium async", mode / rates["gymnasium async"], 1.5)]
    for label, ratio, bar in bars:
        print(f"{label:<40}{ratio:>6.2f}  (bar >= {bar}: {'met' if ratio >= bar else 'NOT met'})")
