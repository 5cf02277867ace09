"""Sync against --async on the same zoo entries, for a fixed number of env steps, in one run.

For each entry both modes run the same config (seed, env steps, hyperparameters); reported:
wall time, the async speedup (sync wall / async wall), the final evaluation return, and where
the time went (per-middleware profile, and the overlap the async scheduler achieved: middleware
time / wall time).

Run:  python benchmarks/async_speedup.py [--steps N] [--entries cartpole-dqn ...]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import time  # noqa: E402

import gymnasium as gym  # noqa: E402

from rlpipe.envs import register_env  # noqa: E402
from rlpipe.zoo import ENTRIES, train  # noqa: E402


class SlowStep(gym.Wrapper):
    """CartPole whose step takes ~1 ms more, like a simulator or a robot: env-bound collection."""

    def step(self, action):
        time.sleep(0.001)
        return self.env.step(action)


def slow_cartpole() -> gym.Env:
    return SlowStep(gym.make("CartPole-v1"))

# Each entry with the settings of this benchmark: subprocess envs make collection expensive
# and GIL-free (it happens in the env workers), which is where overlapping it with training pays.
CASES = {
    "cartpole-dqn": ("cartpole-dqn", ["env.mode='async'", "env.n_envs=4", "env.stop_value=1e9"]),
    "pendulum-sac": ("pendulum-sac", ["env.mode='async'", "env.n_envs=2", "env.stop_value=1e9"]),
    # the same entry on an env-bound workload: a 1 ms step in 2 subprocess envs
    "cartpole-dqn-slow-env": ("cartpole-dqn", ["env.id='cartpole-slow'", "env.mode='async'",
                                               "env.n_envs=2", "env.stop_value=1e9"]),
}


def run(case: str, steps: int, async_mode: bool) -> dict:
    entry, overrides = CASES[case]
    with tempfile.TemporaryDirectory() as run_dir:
        return train(entry, seed=0, max_env_step=steps, run_dir=run_dir, progress=False,
                     async_mode=async_mode, overrides=overrides)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--entries", nargs="+", default=[c for c in CASES if CASES[c][0] in ENTRIES])
    parser.add_argument("--profile", action="store_true", help="print the per-middleware profiles")
    args = parser.parse_args()
    register_env("cartpole-slow", slow_cartpole, overwrite=True)
    print(f"{'case':22s}{'sync s':>9s}{'async s':>9s}{'speedup':>9s}{'overlap':>9s}"
          f"{'return sync':>13s}{'return async':>14s}")
    for entry in args.entries:
        sync = run(entry, args.steps, async_mode=False)
        fast = run(entry, args.steps, async_mode=True)
        print(f"{entry:22s}{sync['wall_time']:9.1f}{fast['wall_time']:9.1f}"
              f"{sync['wall_time'] / fast['wall_time']:9.2f}{fast['profile'].overlap:9.2f}"
              f"{sync['eval_value']:13.1f}{fast['eval_value']:14.1f}", flush=True)
        if args.profile:
            print(sync["profile"])
            print(fast["profile"])


if __name__ == "__main__":
    main()
