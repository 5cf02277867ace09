"""DI-engine's `dqn.py` and `ppo.py`, as ported in tests/dingengine, at full budget on CartPole.

DI-engine's examples have no env-step budget: they run until the evaluator's mean return
reaches `stop_value` (195 on CartPole-v0, dizoo's cartpole_dqn/ppo configs). Each port runs
here on the zoo's config (CartPole-v1) with that stop value (`--stop`; `--no-stop` runs the
whole budget), capped at the zoo entry's budget, and prints the env step of the first
evaluation at or above 195 (`--threshold`), and the best and last evaluation.

Run:  python benchmarks/dingengine_ports.py [--which dqn ppo] [--seed 0] [--stop 195 | --no-stop]
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
from typing import Optional

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from rlpipe.middleware import read_metrics  # noqa: E402
from rlpipe.zoo import get_entry  # noqa: E402
from tests.dingengine.test_example_ports import dqn_main, ppo_main  # noqa: E402

PORTS = {"dqn": ("cartpole-dqn", dqn_main), "ppo": ("cartpole-ppo", ppo_main)}


def run(which: str, seed: int, stop: Optional[float], threshold: float, run_dir: str) -> dict:
    entry, main = PORTS[which]
    cfg = get_entry(entry).resolve()
    cfg.seed, cfg.run_dir, cfg.env.stop_value = seed, run_dir, stop
    main(cfg)
    evals = [(r["env_step"], r["eval/return_mean"]) for r in read_metrics(run_dir)
             if "eval/return_mean" in r]
    solved = next((step for step, value in evals if value >= threshold), None)
    return {"port": which, "entry": entry, "seed": seed, "budget": cfg.max_env_step,
            "stop_value": stop, "threshold": threshold, "solved_at": solved,
            "env_steps": evals[-1][0],
            "best_eval": max(v for _, v in evals), "last_eval": evals[-1][1],
            "evaluations": len(evals)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--which", nargs="+", default=list(PORTS), choices=list(PORTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stop", type=float, default=195.0)
    parser.add_argument("--no-stop", action="store_true", help="run the whole budget")
    parser.add_argument("--threshold", type=float, default=195.0)
    args = parser.parse_args()
    stop = None if args.no_stop else args.stop
    for which in args.which:
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = str(pathlib.Path(tmp) / "run")
            print(json.dumps(run(which, args.seed, stop, args.threshold, run_dir)), flush=True)


if __name__ == "__main__":
    main()
