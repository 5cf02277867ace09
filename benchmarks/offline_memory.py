"""Memory and sampling speed of a large offline data set (Minari on disk -> OfflineDataset).

    .venv/bin/python benchmarks/offline_memory.py           # 1M transitions (~1.5 min)
    .venv/bin/python benchmarks/offline_memory.py --quick   # 100k transitions

Writes a synthetic data set (17-dim float32 observations, 6-dim float32 actions, episodes of
1000 steps: MuJoCo-sized rows) with `write_dataset` into a temporary Minari root, then loads it
with `load_dataset` in a fresh process and prints:

- the raw size of the data, observations counted once (T+1 rows per episode);
- the bytes of the arrays the OfflineDataset holds, as a ratio to that raw size;
- the process's peak RSS growth while loading, as a ratio to the raw size (the baseline is the
  RSS after imports, measured in the same process);
- `sample(256)` per call, against `ReplayBuffer.sample(256)` over the same transitions in the
  ReplayBuffer layout (obs and next_obs both stored), measured in the same process.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout
OBS, ACT, LENGTH, BATCH = 17, 6, 1000, 256
DATASET_ID = "bench/synthetic-v0"


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write(n_episodes: int) -> float:
    import gymnasium as gym

    from rlpipe.data import write_dataset

    rng = np.random.default_rng(0)
    episodes = []
    for _ in range(n_episodes):
        trunc = np.zeros(LENGTH, bool)
        trunc[-1] = True
        episodes.append({"observations": rng.normal(size=(LENGTH + 1, OBS)).astype(np.float32),
                         "actions": rng.uniform(-1, 1, (LENGTH, ACT)).astype(np.float32),
                         "rewards": rng.normal(size=LENGTH), "terminations": np.zeros(LENGTH, bool),
                         "truncations": trunc})
    obs_space = gym.spaces.Box(-np.inf, np.inf, (OBS,), np.float32)
    act_space = gym.spaces.Box(-1.0, 1.0, (ACT,), np.float32)
    start = time.perf_counter()
    write_dataset(DATASET_ID, episodes, None, algorithm_name="synthetic",
                  observation_space=obs_space, action_space=act_space)
    return time.perf_counter() - start


def load_and_measure() -> dict:
    """Run in a fresh process: load, measure memory, time sampling."""
    from rlpipe.data import ReplayBuffer, load_dataset

    import minari  # noqa: F401 - imported before the baseline, as load_dataset imports it

    base = rss_mb()
    start = time.perf_counter()
    ds = load_dataset(DATASET_ID)
    load_s = time.perf_counter() - start
    peak = peak_mb()
    n, e = len(ds), ds.n_episodes
    raw = (n + e) * OBS * 4 + n * (ACT * 4 + 4 + 1 + 1)  # obs once; actions, reward, 2 flags
    timings = {}
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(200):
            ds.sample(BATCH)
        timings["offline"] = min(timings.get("offline", 1e9), (time.perf_counter() - start) / 200)
    rows = ds.rows(np.arange(n))
    rows.pop("index")
    buffer = ReplayBuffer(n, seed=0)
    buffer.push(rows)
    del rows
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(200):
            buffer.sample(BATCH)
        timings["replay"] = min(timings.get("replay", 1e9), (time.perf_counter() - start) / 200)
    return {"transitions": n, "episodes": e, "raw_mb": raw / 2**20,
            "arrays_mb": ds.nbytes / 2**20, "rss_before_mb": base, "peak_rss_mb": peak,
            "load_s": load_s, "sample_ms": timings["offline"] * 1e3,
            "replay_sample_ms": timings["replay"] * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100k transitions")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(load_and_measure()))
        return
    n_episodes = 100 if args.quick else 1000
    with tempfile.TemporaryDirectory() as root:
        os.environ["MINARI_DATASETS_PATH"] = root
        write_s = write(n_episodes)
        out = subprocess.run([sys.executable, __file__, "--measure"], capture_output=True,
                             text=True, check=True, env=dict(os.environ))
        r = json.loads(out.stdout.strip().splitlines()[-1])
    grew = r["peak_rss_mb"] - r["rss_before_mb"]
    print(f"{r['transitions']:,} transitions in {r['episodes']} episodes "
          f"({OBS}-dim float32 obs, {ACT}-dim actions)")
    print(f"  write_dataset                  {write_s:.1f} s")
    print(f"  load_dataset                   {r['load_s']:.1f} s")
    print(f"  raw data (obs once)            {r['raw_mb']:.1f} MB")
    print(f"  arrays held                    {r['arrays_mb']:.1f} MB  "
          f"({r['arrays_mb'] / r['raw_mb']:.2f}x raw; obs+next_obs copies would be "
          f"{(r['raw_mb'] + r['transitions'] * OBS * 4 / 2**20) / r['raw_mb']:.2f}x)")
    print(f"  peak RSS growth while loading  {grew:.1f} MB  ({grew / r['raw_mb']:.2f}x raw; "
          f"RSS after imports {r['rss_before_mb']:.0f} MB)")
    print(f"  sample({BATCH})                    {r['sample_ms']:.3f} ms/call  "
          f"(ReplayBuffer.sample({BATCH}): {r['replay_sample_ms']:.3f} ms, ratio "
          f"{r['sample_ms'] / r['replay_sample_ms']:.2f})")


if __name__ == "__main__":
    main()
