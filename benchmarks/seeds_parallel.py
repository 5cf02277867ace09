"""`rlpipe train ENTRY --seeds` with `--jobs 1` against `--jobs K`, in one run.

Both train the same seeds of the same entry for the same env steps; reported: the wall time of
each whole command (process start-up included), the speedup (jobs 1 / jobs K), and the final
returns per seed of each (the same seeds, so they should agree whether run one at a time or
together; the children's threads differ, so small differences can come from torch's kernels).
On a machine with fewer free cores than K the speedup shows the contention, not the design.

Run:  python benchmarks/seeds_parallel.py [--entry cartpole-dqn] [--seeds 0-3] [--jobs K]
      [--max-env-steps N]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run(entry: str, seeds: str, jobs: int, steps: int, folder: pathlib.Path) -> tuple:
    command = [sys.executable, "-m", "rlpipe.cli", "train", entry, "--seeds", seeds,
               "--jobs", str(jobs), "--run-dir", str(folder), "--max-env-steps", str(steps)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"`{' '.join(command)}` failed:\n{done.stderr[-2000:]}")
    seeds_out = json.loads(done.stdout.strip().splitlines()[-1])["seeds"]
    return wall, {s["seed"]: s["summary"]["eval_value"] for s in seeds_out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entry", default="cartpole-dqn")
    parser.add_argument("--seeds", default="0-3")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--max-env-steps", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        one, finals_one = run(args.entry, args.seeds, 1, args.max_env_steps, pathlib.Path(tmp, "a"))
        many, finals_many = run(args.entry, args.seeds, args.jobs, args.max_env_steps,
                                pathlib.Path(tmp, "b"))
    print(f"{args.entry}, seeds {args.seeds}, {args.max_env_steps} env steps each, "
          f"{os.cpu_count()} CPUs")
    print(f"  --jobs 1: {one:7.1f} s   finals {finals_one}")
    print(f"  --jobs {args.jobs}: {many:7.1f} s   finals {finals_many}")
    print(f"  speedup (jobs 1 / jobs {args.jobs}): {one / many:.2f}x")


if __name__ == "__main__":
    main()
