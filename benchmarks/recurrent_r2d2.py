"""R2D2 on CartPole without velocities (`cartpole-novel-r2d2`): does memory solve the POMDP?

For each seed: env steps until the mean eval return first reaches 400 (the run stops there;
budget 200k env steps), the final eval return, and the wall time. The baseline, run in the same
process, is feed-forward DQN (the `cartpole-dqn` entry's settings) on the same masked env and
budget: the ratio lines compare R2D2 with it.

Run:  python benchmarks/recurrent_r2d2.py [--seeds 0 1] [--budget 200000] [--no-baseline]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from rlpipe.training import train  # noqa: E402

TARGET = 400


def run(entry: str, seed: int, budget: int, overrides: list) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        out = train(entry, seed=seed, max_env_step=budget, progress=False, run_dir=f"{tmp}/run",
                    overrides=[f"env.stop_value={TARGET}", "logger.tensorboard=False",
                               "ckpt.train_freq=1000000"] + overrides)
        wall = time.perf_counter() - start
    solved = out["best_eval_value"] >= TARGET
    return {"steps": out["env_step"] if solved else None, "best": out["best_eval_value"],
            "final": out["eval_value"], "wall": wall}


def line(name: str, seed: int, r: dict) -> str:
    steps = f"{r['steps']:>7d}" if r["steps"] is not None else "   none"
    return (f"{name:<22} seed {seed}: steps to {TARGET}: {steps}   best {r['best']:6.1f}   "
            f"final {r['final']:6.1f}   wall {r['wall']:6.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--budget", type=int, default=200_000)
    parser.add_argument("--no-baseline", action="store_true")
    args = parser.parse_args()
    r2d2 = {}
    for s in args.seeds:  # each line as soon as its run ends: a long sweep shows progress
        r2d2[s] = run("cartpole-novel-r2d2", s, args.budget, [])
        print(line("cartpole-novel-r2d2", s, r2d2[s]), flush=True)
    solved = sum(r["steps"] is not None for r in r2d2.values())
    print(f"cartpole-novel-r2d2: reached {TARGET} on {solved}/{len(r2d2)} seeds, mean wall "
          f"{sum(r['wall'] for r in r2d2.values()) / len(r2d2):.1f} s", flush=True)
    if args.no_baseline:
        return
    dqn = {s: run("cartpole-dqn", s, args.budget, ["env.id=rlpipe/CartPoleNoVel-v1"])
           for s in args.seeds[:1]}
    for s, r in dqn.items():
        print(line("dqn (feed-forward)", s, r), flush=True)
    base = dqn[args.seeds[0]]
    for s, r in r2d2.items():
        print(f"ratio r2d2/dqn seed {s}: best return {r['best'] / max(base['best'], 1e-9):.2f}x, "
              f"wall {r['wall'] / base['wall']:.2f}x")


if __name__ == "__main__":
    main()
