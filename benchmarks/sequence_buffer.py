"""Sequence replay: SequenceAdder + SequenceReplayBuffer against ReplayBuffer on the same steps.

    .venv/bin/python benchmarks/sequence_buffer.py           # ~30 s
    .venv/bin/python benchmarks/sequence_buffer.py --quick   # shorter timings

A stream of 8 envs (CartPole-size obs: 4 float32, an LSTM state h, c of 64 float32 each,
episodes of 50-400 steps) goes through a SequenceAdder and into a SequenceReplayBuffer; the
same steps, as one-step transitions, go into a ReplayBuffer (the baseline, measured in the same
run). Printed:

- add + push: env steps per second through adder and buffer, vs ReplayBuffer.push of the same
  steps (one vector step at a time, as data_pusher does);
- sample: ms per sample(64) sequences of burn_in + seq_len steps (and with update_priority of
  a [64, L] TD error when prioritized), vs ReplayBuffer.sample of the same 64 * L transitions;
- memory: bytes held per stored env step (all arrays / steps held), vs ReplayBuffer's bytes
  per transition. Overlapping windows store each step L / stride times; the start state is
  stored once per sequence.
Each timing is the best of 5 rounds.
"""
from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, installed or not
from rlpipe.data import ReplayBuffer, SequenceAdder, SequenceReplayBuffer, UpdateSchedule  # noqa: E402

N_ENVS, OBS, HIDDEN, BATCH = 8, 4, 64, 64


def records(n_steps: int, seed: int = 0) -> List[Dict[str, np.ndarray]]:
    """Step records as the acting path writes them for a recurrent policy."""
    rng = np.random.default_rng(seed)
    length = rng.integers(50, 400, N_ENVS)
    t = np.zeros(N_ENVS, np.int64)
    out = []
    for _ in range(n_steps):
        first, end = t == 0, t == length - 1
        obs = rng.normal(size=(N_ENVS, OBS)).astype(np.float32)
        state = rng.normal(size=(2, N_ENVS, HIDDEN)).astype(np.float32) * ~first[None, :, None]
        out.append({"obs": obs, "action": rng.integers(0, 2, N_ENVS), "reward": np.ones(N_ENVS, np.float32),
                    "next_obs": obs + 1, "terminated": end, "truncated": np.zeros(N_ENVS, bool),
                    "valid": np.ones(N_ENVS, bool), "first": first, "state": {"h": state[0], "c": state[1]}})
        t = np.where(end, 0, t + 1)
        length = np.where(end, rng.integers(50, 400, N_ENVS), length)
    return out


def best_time(fn: Callable[[], None], seconds: float, rounds: int = 5) -> float:
    """Seconds per call of `fn`: the best of `rounds` rounds of `seconds / rounds` each."""
    fn()
    best = np.inf
    for _ in range(rounds):
        calls, start = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= seconds / rounds and calls >= 2:
                break
        best = min(best, elapsed / calls)
    return best


def nbytes(buf) -> int:
    inner = getattr(buf, "_buffer", buf)
    return sum(a.nbytes for a in inner._storage.arrays.values())


def transitions(rec: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    return {k: v for k, v in rec.items() if k not in ("first", "state", "valid")}


def run(seq_len: int, burn_in: int, stride: int, stream: List[Dict], seconds: float) -> None:
    L = seq_len + burn_in
    capacity = 4096

    def fill() -> SequenceReplayBuffer:
        buf = SequenceReplayBuffer(capacity, seq_len, burn_in, prioritized=True, seed=0,
                                   controller=UpdateSchedule())  # counts the env steps stored
        adder = SequenceAdder(seq_len, burn_in, stride, N_ENVS)
        for rec in stream:
            out = adder.add(rec)
            if out is not None:
                buf.push(out)
        assert len(buf) < capacity, "the buffer overflowed: raise capacity"
        return buf

    def fill_flat() -> ReplayBuffer:
        buf = ReplayBuffer(len(stream) * N_ENVS, seed=0)
        for rec in stream:
            buf.push(transitions(rec))
        return buf

    seq_fill = best_time(fill, seconds, rounds=3) / (len(stream) * N_ENVS)
    flat_fill = best_time(fill_flat, seconds, rounds=3) / (len(stream) * N_ENVS)
    seqs, flat = fill(), fill_flat()
    seq_steps = seqs.controller.inserted
    sample = best_time(lambda: seqs.sample(BATCH), seconds)
    td = np.random.default_rng(0).random((BATCH, L))

    def sample_update() -> None:
        batch = seqs.sample(BATCH)
        seqs.update_priority(batch["index"], td, batch["mask"])

    update = best_time(sample_update, seconds)
    flat_sample = best_time(lambda: flat.sample(BATCH * L), seconds)
    seq_bytes = nbytes(seqs) * len(seqs) / seqs.capacity / seq_steps  # the rows in use
    flat_bytes = nbytes(flat) / flat.capacity
    print(f"seq_len {seq_len}, burn_in {burn_in}, stride {stride} (L = {L}): {len(seqs)} sequences "
          f"hold {seq_steps} env steps")
    print(f"  add + push   {1 / seq_fill:>12,.0f} steps/s   ReplayBuffer.push {1 / flat_fill:>12,.0f} steps/s"
          f"   {flat_fill / seq_fill:.2f}x its rate")
    print(f"  sample({BATCH})  {sample * 1e3:>9.3f} ms         ReplayBuffer.sample({BATCH * L}) "
          f"{flat_sample * 1e3:.3f} ms   {sample / flat_sample:.2f}x its time")
    print(f"  sample + update_priority {update * 1e3:.3f} ms")
    print(f"  memory       {seq_bytes:>9.1f} B/step       ReplayBuffer {flat_bytes:.1f} B/transition"
          f"   {seq_bytes / flat_bytes:.2f}x its bytes", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="0.3 s per figure, fewer steps")
    args = parser.parse_args()
    seconds = 0.3 if args.quick else 1.5
    stream = records(600 if args.quick else 2000)
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}; "
          f"{N_ENVS} envs, obs {OBS} float32, LSTM state 2 x {HIDDEN} float32")
    for seq_len, burn_in, stride in ((80, 40, 40), (80, 40, 80), (40, 0, 40)):
        run(seq_len, burn_in, stride, stream, seconds)


if __name__ == "__main__":
    main()
