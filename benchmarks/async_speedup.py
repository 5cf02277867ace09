"""Sync against --async on the same zoo entries, for a fixed number of env steps, in one run.

For each case both modes run the same config (seed, env steps, hyperparameters), alternating
sync and async `--repeats` times; reported: the median wall time of the whole `train()` call
(start-up and shutdown of every process included), the async speedup (sync / async), and the
final and best evaluation returns of each mode (mean over the repeats).

`--async` on an off-policy entry collects in one child process and evaluates in another, beside
the learner (see docs/concepts.md, "When async pays"): it pays as much as collection and
evaluation take of a sync iteration, and nothing when the learner is nearly all of it.

Run:  python benchmarks/async_speedup.py [--cases cartpole-dqn ...] [--repeats N] [--profile]
"""
from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import gymnasium as gym  # noqa: E402

from rlpipe.envs import register_env  # noqa: E402
from rlpipe.zoo import ENTRIES  # noqa: E402
from rlpipe.training import train  # noqa: E402


class SlowStep(gym.Wrapper):
    """CartPole whose step takes ~1 ms more, like a simulator or a robot: env-bound collection."""

    def step(self, action):
        time.sleep(0.001)
        return self.env.step(action)


def slow_cartpole() -> gym.Env:
    return SlowStep(gym.make("CartPole-v1"))


# case: (zoo entry, env steps, overrides). Subprocess envs, as the issue asks for.
CASES = {
    "cartpole-dqn": ("cartpole-dqn", 20_000,
                     ["env.mode='async'", "env.n_envs=4", "env.stop_value=1e9"]),
    "pendulum-sac": ("pendulum-sac", 5_000,
                     ["env.mode='async'", "env.n_envs=2", "env.stop_value=1e9"]),
    # the same DQN entry on an env-bound workload: a 1 ms step in 2 subprocess envs
    "cartpole-dqn-slow-env": ("cartpole-dqn", 8_000,
                              ["env.id='cartpole-slow'", "env.mode='async'", "env.n_envs=2",
                               "env.stop_value=1e9"]),
}


def run(case: str, async_mode: bool, steps: int) -> dict:
    entry, _, overrides = CASES[case]
    with tempfile.TemporaryDirectory() as run_dir:
        start = time.perf_counter()
        result = train(entry, seed=0, max_env_step=steps, run_dir=run_dir, progress=False,
                       async_mode=async_mode, overrides=overrides)
        result["outer_wall"] = time.perf_counter() - start
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", nargs="+", default=[c for c in CASES if CASES[c][0] in ENTRIES])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--steps", type=int, help="env steps for every case (default: per case)")
    parser.add_argument("--profile", action="store_true", help="print the learner's profiles")
    args = parser.parse_args()
    register_env("cartpole-slow", slow_cartpole, overwrite=True)
    run("cartpole-dqn", False, 300)  # warm-up: lazy imports (TensorBoard...) are paid here once
    print(f"{'case':22s}{'steps':>7s}{'sync s':>9s}{'async s':>9s}{'speedup':>9s}"
          f"{'final sync':>12s}{'final async':>13s}{'best sync':>11s}{'best async':>12s}")
    for case in args.cases:
        steps = args.steps or CASES[case][1]
        results = {False: [], True: []}
        for _ in range(args.repeats):
            for mode in (False, True):
                results[mode].append(run(case, mode, steps))
        wall = {m: statistics.median(r["outer_wall"] for r in rs) for m, rs in results.items()}
        final = {m: statistics.mean(r["eval_value"] for r in rs) for m, rs in results.items()}
        best = {m: statistics.mean(r["best_eval_value"] for r in rs) for m, rs in results.items()}
        print(f"{case:22s}{steps:7d}{wall[False]:9.1f}{wall[True]:9.1f}"
              f"{wall[False] / wall[True]:9.2f}{final[False]:12.1f}{final[True]:13.1f}"
              f"{best[False]:11.1f}{best[True]:12.1f}", flush=True)
        if args.profile:
            print(results[False][-1]["profile"])
            print(results[True][-1]["profile"])


if __name__ == "__main__":
    main()
