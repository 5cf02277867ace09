"""Replay-buffer throughput: push and sample, in transitions per second, for batches of 256.

    .venv/bin/python benchmarks/buffer.py            # full run (~1.5 min, ~1.2 GB RAM for Atari)
    .venv/bin/python benchmarks/buffer.py --quick    # smaller buffers, shorter timings

Two observation sizes: CartPole (4 float32) and Atari (4 stacked 84x84 uint8 frames, stored
twice per transition: obs and next_obs). Each buffer is filled once before timing, so pushes
are measured in the steady state (ring overwrite, pages already committed). The prioritized
rows also time `update_priority` for the sampled batch, as a learner would after each step.
Each figure is the best of 5 rounds. For Atari-size batches, try it with
MALLOC_TOP_PAD_=67108864 as well (see docs/data.md, "Throughput").
"""
from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path
from typing import Callable, Dict

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, installed or not
from rlpipe.data import PrioritizedReplayBuffer, ReplayBuffer, to_torch  # noqa: E402

BATCH = 256


def make_batch(obs_shape: tuple, dtype: type, rng: np.random.Generator) -> Dict[str, np.ndarray]:
    if dtype == np.uint8:
        obs = rng.integers(0, 255, size=(BATCH,) + obs_shape, dtype=np.uint8)
    else:
        obs = rng.normal(size=(BATCH,) + obs_shape).astype(dtype)
    return {"obs": obs, "action": rng.integers(0, 4, BATCH), "reward": rng.normal(size=BATCH).astype(np.float32),
            "next_obs": obs.copy(), "terminated": np.zeros(BATCH, bool), "truncated": np.zeros(BATCH, bool)}


def rate(fn: Callable[[], None], seconds: float, rounds: int = 5) -> float:
    """Transitions per second of `fn` (BATCH transitions per call): the best of `rounds`
    rounds of `seconds / rounds` each, so that other jobs on the machine disturb it less."""
    fn()
    best = 0.0
    for _ in range(rounds):
        calls, start = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= seconds / rounds and calls >= 2:
                break
        best = max(best, calls * BATCH / elapsed)
    return best


def bench(name: str, buf: ReplayBuffer, batch: Dict[str, np.ndarray], seconds: float) -> None:
    while len(buf) < buf.capacity:  # fill once: commit the pages, reach the steady state
        buf.push(batch)
    push = rate(lambda: buf.push(batch), seconds)
    sample = rate(lambda: buf.sample(BATCH), seconds)
    row = f"{name:<34} {push:>14,.0f} {sample:>14,.0f}"
    if isinstance(buf, PrioritizedReplayBuffer):
        prio = np.random.default_rng(0).random(BATCH)

        def sample_update() -> None:
            b = buf.sample(BATCH)
            buf.update_priority(b["index"], prio)

        row += f" {rate(sample_update, seconds):>16,.0f}"
    else:
        row += f" {'':>16}"
    row += f" {rate(lambda: to_torch(buf.sample(BATCH)), seconds):>16,.0f}"
    print(row, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small buffers, 0.3 s per figure")
    parser.add_argument("--seconds", type=float, default=None, help="timing per figure (default 2.0)")
    args = parser.parse_args()
    seconds = args.seconds or (0.3 if args.quick else 2.0)
    small_cap = 10_000 if args.quick else 100_000
    atari_cap = 2_048 if args.quick else 20_000
    rng = np.random.default_rng(0)
    cartpole = make_batch((4,), np.float32, rng)
    atari = make_batch((4, 84, 84), np.uint8, rng)

    print(f"batch {BATCH}; numpy {np.__version__}; {platform.processor() or platform.machine()}; "
          f"transitions/s (higher is better)")
    print(f"{'buffer':<34} {'push':>14} {'sample':>14} {'sample+update':>16} {'sample+to_torch':>16}")
    bench(f"uniform, CartPole, cap {small_cap:,}", ReplayBuffer(small_cap, seed=0), cartpole, seconds)
    bench(f"prioritized, CartPole, cap {small_cap:,}", PrioritizedReplayBuffer(small_cap, seed=0),
          cartpole, seconds)
    bench(f"uniform, Atari, cap {atari_cap:,}", ReplayBuffer(atari_cap, seed=0), atari, seconds)
    bench(f"prioritized, Atari, cap {atari_cap:,}", PrioritizedReplayBuffer(atari_cap, seed=0), atari, seconds)


if __name__ == "__main__":
    main()
