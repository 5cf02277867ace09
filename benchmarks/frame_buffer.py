"""FrameReplayBuffer vs ReplayBuffer on Atari-shaped transitions: memory and speed (issue #18).

    python benchmarks/frame_buffer.py            # capacity 20,000 (~1.5 GB peak for the plain one)
    python benchmarks/frame_buffer.py --quick    # capacity 5,000
    python benchmarks/frame_buffer.py --quick --nstep 3   # rows of 3-step returns
    python benchmarks/frame_buffer.py --memory   # peak memory of save and load, 100k rows

Both buffers are fed the same transitions: 8 envs interleaved, [4, 84, 84] uint8 stacks of
random frames, episodes of 500-1500 steps (Pong's are ~800 agent steps), each starting with the
reset frame repeated (as FrameStackObservation pads), n=1 rows (`--nstep N`: the rows of
`NStepAccumulator`, whose next_obs is N steps after obs, as DI-engine's Atari DQN uses). Memory is the bytes a buffer
holds per transition once full (frames ever used + frame indices + the other keys, against the
plain buffer's arrays), projected to 1M transitions. Timings: pushes of one env step of 8 envs
(what data_pusher does with n_sample=8) and sample(32), best of 5 rounds; ratios are frame /
plain, measured in this run.

`--memory` fills a FrameReplayBuffer of 100k rows (about 0.7 GB of frames) and measures, each
in a fresh process, the peak resident memory above the filled buffer of `save()` and of
`load()` from the file (what a checkpoint and a resume do), beside the same from copies
(`save_state(state_dict())`), from the file's bytes in memory (`load(BytesIO(bytes))`) and
with each array read whole before it is copied into the buffer
(`load_state_dict(load_state(path))`); the loads also report their CPU seconds.
"""
from __future__ import annotations

import argparse
import io
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rlpipe.data import FrameReplayBuffer, NStepAccumulator, ReplayBuffer  # noqa: E402
from rlpipe.data._serialize import load_state, save_state  # noqa: E402

N_ENVS, K = 8, 4


def steps(n_steps: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    frame = lambda: rng.integers(0, 256, (84, 84), dtype=np.uint8)  # noqa: E731
    stacks = [np.repeat(frame()[None], K, 0) for _ in range(N_ENVS)]
    left = rng.integers(500, 1500, N_ENVS)
    for _ in range(n_steps):
        obs = np.stack(stacks)
        nxt = np.stack([np.concatenate([s[1:], frame()[None]]) for s in stacks])
        left -= 1
        done = left == 0
        for e in np.flatnonzero(done):
            stacks[e] = np.repeat(frame()[None], K, 0)
            left[e] = rng.integers(500, 1500)
        for e in np.flatnonzero(~done):
            stacks[e] = nxt[e]
        yield {"obs": obs, "next_obs": nxt, "action": rng.integers(0, 6, N_ENVS),
               "reward": np.zeros(N_ENVS, np.float32), "terminated": done,
               "truncated": np.zeros(N_ENVS, bool)}


def rows(n_steps: int, nstep: int):
    """The transitions of `steps(n_steps)`, as n-step rows when `nstep` > 1 (a step completes
    the windows that end there: N_ENVS rows in steady state)."""
    if nstep == 1:
        yield from steps(n_steps)
        return
    acc = NStepAccumulator(nstep, 0.99, N_ENVS)
    for step in steps(n_steps):
        out = acc.push(step)
        if out is not None:
            yield out


def plain_nbytes(buf: ReplayBuffer) -> int:
    return sum(a.nbytes for a in buf._storage.arrays.values())


def best(fn, rounds: int = 5) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


MEMORY_ROWS = 100_000


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def memory_child(how: str, path: str) -> None:
    """One measurement, in this (fresh) process: prints the peak MB above the starting point
    and the CPU seconds of the step."""
    buf = FrameReplayBuffer(MEMORY_ROWS, seed=0)
    if how.startswith("save"):
        for batch in steps(MEMORY_ROWS // N_ENVS + 10):
            buf.push(batch)
    start, cpu = peak_mb(), time.process_time()
    if how == "save":
        buf.save(path)
    elif how == "save-copies":
        save_state(buf.state_dict(), path)
    elif how == "load":
        buf.load(path)
    elif how == "load-whole":
        buf.load_state_dict(load_state(path))
    else:  # load-bytes
        with open(path, "rb") as f:
            buf.load(io.BytesIO(f.read()))
    print(f"{peak_mb() - start:.0f} {time.process_time() - cpu:.2f}")


def memory() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/buffer.npz"
        figures = {}
        for how in ("save-copies", "save", "load-bytes", "load-whole", "load"):
            out = subprocess.run([sys.executable, __file__, "--memory-child", how, path],
                                 check=True, capture_output=True, text=True).stdout
            figures[how] = [float(x) for x in out.split()[-2:]]  # peak MB, CPU s
        size = Path(path).stat().st_size / 2**20
    print(f"FrameReplayBuffer of {MEMORY_ROWS:,} rows, file {size:,.0f} MB; peak MB above the "
          f"buffer, each in a fresh process")
    print(f"save(): {figures['save'][0]:,.0f} (from copies: {figures['save-copies'][0]:,.0f})")
    (mb, cpu), (whole_mb, whole_cpu) = figures["load"], figures["load-whole"]
    print(f"load(path) above an empty buffer: {mb:,.0f} MB, {cpu:.2f} CPU s (each array read "
          f"whole, then copied: {whole_mb:,.0f} MB, {whole_cpu:.2f} CPU s; from the bytes in "
          f"memory: {figures['load-bytes'][0]:,.0f} MB)")


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--memory-child":
        return memory_child(sys.argv[2], sys.argv[3])
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--nstep", type=int, default=1, help="rows of N-step returns")
    parser.add_argument("--memory", action="store_true", help="peak memory of save and load")
    args = parser.parse_args()
    if args.memory:
        return memory()
    capacity = 5_000 if args.quick else 20_000
    plain, frames = ReplayBuffer(capacity, seed=0), FrameReplayBuffer(capacity, seed=0)
    data = rows(capacity // N_ENVS + 5 * 200 + 10 + args.nstep, args.nstep)
    for _ in range(capacity // N_ENVS + 10):  # fill (and wrap): memory and timings are steady state
        batch = next(data)
        plain.push(batch)
        frames.push(batch)
    per_plain = plain_nbytes(plain) / capacity
    per_frame = frames.nbytes() / capacity
    print(f"capacity {capacity}, {N_ENVS} envs, obs [4, 84, 84] uint8, {args.nstep}-step rows")
    print(f"bytes per transition: plain {per_plain:,.0f}, frames {per_frame:,.0f} "
          f"(ratio {per_frame / per_plain:.3f})")
    print(f"1M transitions: plain {per_plain * 1e6 / 1e9:.1f} GB, frames {per_frame * 1e6 / 1e9:.2f} GB")
    rounds = [[next(data) for _ in range(200)] for _ in range(5)]  # fresh steps for every round
    for name, buf in (("plain", plain), ("frames", frames)):
        todo = iter(rounds)
        t_push = best(lambda: [buf.push(b) for b in next(todo)]) / 200
        t_sample = best(lambda: [buf.sample(32) for _ in range(200)]) / 200
        print(f"{name:6s}: push(8 rows) {t_push * 1e6:7.1f} us, sample(32) {t_sample * 1e6:7.1f} us")
        if name == "plain":
            base = (t_push, t_sample)
        else:
            print(f"ratio frames/plain: push {t_push / base[0]:.2f}x, sample {t_sample / base[1]:.2f}x")


if __name__ == "__main__":
    main()
