"""A zoo entry's solve rate: env steps and wall time to reach a mean eval return, per seed.

Each seed trains the entry (default cartpole-ppo, stop 475, budget 100k env steps) with its own
stop value and evaluation schedule, then re-measures the saved best policy on 20 fresh episodes
(`rlpipe eval`). With `--full` the stop value is dropped and every run goes the whole budget:
the table then also shows the last evaluation, i.e. whether the policy stays solved.

Run:  python benchmarks/solve_rate.py [--entry cartpole-ppo] [--stop 475] [--seeds 0 1 2 3 4]
                                      [--budget 100000] [--full]
e.g.  python benchmarks/solve_rate.py --entry minigrid-doorkey-ppo --stop 0.85 --budget 500000
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from rlpipe.middleware import read_metrics  # noqa: E402
from rlpipe.training import train  # noqa: E402
from rlpipe.tools.evaluate import evaluate_run  # noqa: E402

def first_solved(run_dir: str, stop: float) -> int | None:
    """The env step of the first metrics row whose eval mean return reached `stop` (the row is
    written at the end of the iteration, so this counts that iteration's rollout too)."""
    for record in read_metrics(run_dir):
        value = record.get("eval/return_mean")
        if value is not None and value >= stop:
            return int(record["env_step"])
    return None


def run(entry: str, stop: float, seed: int, budget: int, full: bool) -> dict:
    overrides = ["env.stop_value=None"] if full else []
    with tempfile.TemporaryDirectory() as run_dir:
        r = train(entry, seed=seed, max_env_step=budget, run_dir=run_dir,
                  overrides=overrides, progress=False)
        solved_at = first_solved(run_dir, stop)
        again = evaluate_run(run_dir, episodes=20, seed=2024 + seed)["mean_return"]
    return {"seed": seed, "solved_at": solved_at, "env_step": r["env_step"],
            "best": r["best_eval_value"], "last": r["eval_value"], "best_pt_20_episodes": again,
            "wall_time": r["wall_time"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entry", default="cartpole-ppo", help="zoo entry (default cartpole-ppo)")
    parser.add_argument("--stop", type=float, default=475.0, help="the return that counts as solved")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--budget", type=int, default=100_000)
    parser.add_argument("--full", action="store_true", help="no early stop: run the whole budget")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"{'seed':>4s}{'solved at':>11s}{'env steps':>11s}{'best':>8s}{'last':>8s}"
          f"{'best.pt@20':>11s}{'wall s':>8s}")
    rows = []
    for seed in args.seeds:
        r = run(args.entry, args.stop, seed, args.budget, args.full)
        rows.append(r)
        print(f"{seed:4d}{str(r['solved_at'] or '-'):>11s}{r['env_step']:11d}{r['best']:8.2f}"
              f"{r['last']:8.2f}{r['best_pt_20_episodes']:11.2f}{r['wall_time']:8.1f}", flush=True)
    solved = [r["solved_at"] for r in rows if r["solved_at"] is not None]
    print(f"\nsolved {len(solved)}/{len(rows)} ({args.entry}: mean eval return >= {args.stop:g} within {args.budget} "
          f"env steps); median steps to solve {np.median(solved) if solved else float('nan'):.0f}; "
          f"mean wall time {np.mean([r['wall_time'] for r in rows]):.1f} s")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
