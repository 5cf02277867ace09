"""pendulum-sac and pendulum-td3: env steps and wall time to reach a mean eval return of -200.

Each (entry, seed) trains the zoo entry as `rlpipe train` would (no run folder, so no
TensorBoard or checkpoint cost), stopping at the entry's stop value (-200) or its budget
(20k env steps for SAC, 30k for TD3). "steps" is the env step count at the evaluation that first
reached -200 (evaluations every 500 updates = every ~500 env steps once training starts, 5
episodes each); "best" is the best mean eval return seen; "wall" is the run's wall time.

Run:  python benchmarks/continuous_learning.py [--entries pendulum-sac pendulum-td3]
                                               [--seeds 0 1 2 3 4] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import logging
import pathlib
import platform
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from rlpipe.zoo import get_entry  # noqa: E402


class EvalRecorder(logging.Handler):
    """Collects (env_step, mean return) from the evaluator's log record of each evaluation."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.evals: list = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("eval at train_iter"):
            _, env_step, mean_return = record.args[:3]
            self.evals.append((int(env_step), float(mean_return)))


def run(name: str, seed: int) -> dict:
    entry = get_entry(name)
    cfg = entry.resolve({"seed": seed, "progress": False})
    recorder = EvalRecorder()
    log = logging.getLogger("rlpipe.middleware.evaluator")
    log.addHandler(recorder)
    log.setLevel(logging.INFO)
    try:
        start = time.perf_counter()
        summary = entry.run(cfg)
        wall = time.perf_counter() - start
    finally:
        log.removeHandler(recorder)
    stop = cfg.env.stop_value
    reached = next((step for step, value in recorder.evals if value >= stop), None)
    return {"entry": name, "seed": seed, "steps_to_stop": reached, "budget": cfg.max_env_step,
            "best": max(v for _, v in recorder.evals), "env_step": summary["env_step"],
            "train_iter": summary["train_iter"], "wall_s": wall, "evals": recorder.evals}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", nargs="+", default=["pendulum-sac", "pendulum-td3"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--json", help="also write the results (with every evaluation) here")
    args = parser.parse_args()
    print(f"# {platform.processor() or platform.machine()}, {torch.get_num_threads()} torch "
          f"threads before the run (runs use 1), torch {torch.__version__}")
    print(f"{'entry':<14} {'seed':>4} {'steps to -200':>14} {'best':>8} {'updates':>8} "
          f"{'wall s':>7}")
    results = []
    for name in args.entries:
        for seed in args.seeds:
            r = run(name, seed)
            results.append(r)
            steps = r["steps_to_stop"] if r["steps_to_stop"] is not None else f">{r['budget']}"
            print(f"{name:<14} {seed:>4} {steps!s:>14} {r['best']:>8.1f} {r['train_iter']:>8} "
                  f"{r['wall_s']:>7.1f}", flush=True)
        mine = [r for r in results if r["entry"] == name]
        ok = sum(r["steps_to_stop"] is not None for r in mine)
        print(f"{name}: {ok}/{len(mine)} seeds reached -200; mean wall "
              f"{sum(r['wall_s'] for r in mine) / len(mine):.1f} s")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
