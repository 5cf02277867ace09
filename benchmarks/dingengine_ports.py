"""DI-engine's examples, as ported in tests/dingengine, at full budget.

DI-engine's examples have no env-step budget: they run until the evaluator's mean return
reaches `stop_value`: 195 for `dqn.py` and `ppo.py` (CartPole-v0, dizoo's cartpole_dqn/ppo
configs), 200 for `ppo_lunarlander.py` and `ppo_lunarlander_continuous.py` (dizoo's
lunarlander configs; `apex_dqn_priority_parallel_wandb.py` builds its config from
`ding.config.DQN.gym_lunarlander_v2`, whose stop value is 200 too). Each port runs here on its config (the zoo's `cartpole-dqn`,
`cartpole-ppo`, `lunarlander-ppo` and, for the APE-X port, `lunarlander-dqn`; the generic `ppo@LunarLanderContinuous-v3`, given
`lunarlander-ppo`'s budget of 1M env steps) with that stop value (`--stop`; `--no-stop` runs
the whole budget), capped at the budget, and prints the env step of the first evaluation at or
above the threshold (`--threshold`, the stop value unless given), and the best and last
evaluation. The LunarLander ports need the [box2d] extra.

Run:  python benchmarks/dingengine_ports.py [--which dqn ppo (the default) ppo-lunarlander
      ppo-lunarlander-continuous apex-dqn-lunarlander] [--seed 0] [--stop V | --no-stop] [--threshold V]
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import pathlib
import sys
import tempfile
from typing import Optional

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from rlpipe.middleware import read_metrics  # noqa: E402
from rlpipe.zoo import get_entry  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Port:
    entry: str  # the config's zoo entry
    module: str  # the test module of the port, imported when it runs
    main: str  # the port's main function in it
    stop: float  # DI-engine's stop_value
    budget: Optional[int] = None  # env steps, where the entry's own is not the run's


PORTS = {
    "dqn": Port("cartpole-dqn", "test_example_ports", "dqn_main", 195.0),
    "ppo": Port("cartpole-ppo", "test_example_ports", "ppo_main", 195.0),
    "ppo-lunarlander": Port("lunarlander-ppo", "test_ppo_lunarlander", "ppo_lunarlander_main",
                            200.0),
    "ppo-lunarlander-continuous": Port("ppo@LunarLanderContinuous-v3", "test_ppo_lunarlander",
                                       "ppo_lunarlander_main", 200.0, budget=1_000_000),
    # a learner, an evaluator process and a collector (parallel.launch, backend "local")
    "apex-dqn-lunarlander": Port("lunarlander-dqn", "test_apex_dqn", "_launch", 200.0),
}


def run(which: str, seed: int, stop: Optional[float], threshold: float, run_dir: str) -> dict:
    port = PORTS[which]
    main = getattr(importlib.import_module(f"tests.dingengine.{port.module}"), port.main)
    cfg = get_entry(port.entry).resolve()
    cfg.seed, cfg.run_dir, cfg.env.stop_value = seed, run_dir, stop
    if port.budget is not None:
        cfg.max_env_step = port.budget
    main(cfg)
    evals = [(r["env_step"], r["eval/return_mean"]) for r in read_metrics(run_dir)
             if "eval/return_mean" in r]
    solved = next((step for step, value in evals if value >= threshold), None)
    return {"port": which, "entry": port.entry, "seed": seed, "budget": cfg.max_env_step,
            "stop_value": stop, "threshold": threshold, "solved_at": solved,
            "env_steps": evals[-1][0],
            "best_eval": max(v for _, v in evals), "last_eval": evals[-1][1],
            "evaluations": len(evals)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--which", nargs="+", default=["dqn", "ppo"], choices=list(PORTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stop", type=float, default=None,
                        help="stop value (default: DI-engine's for each port)")
    parser.add_argument("--no-stop", action="store_true", help="run the whole budget")
    parser.add_argument("--threshold", type=float, default=None,
                        help="the return counted as solved (default: DI-engine's stop value)")
    args = parser.parse_args()
    for which in args.which:
        default = PORTS[which].stop
        stop = None if args.no_stop else (default if args.stop is None else args.stop)
        threshold = default if args.threshold is None else args.threshold
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = str(pathlib.Path(tmp) / "run")
            print(json.dumps(run(which, args.seed, stop, threshold, run_dir)), flush=True)


if __name__ == "__main__":
    main()
