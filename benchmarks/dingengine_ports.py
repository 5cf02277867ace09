"""DI-engine's examples, as ported in tests/dingengine, at full budget.

DI-engine's examples have no env-step budget: they run until the evaluator's mean return reaches
`stop_value`: 0 for `mappo.py` (dizoo's simple_spread config: never reached, so it runs its
whole budget), 195 for `dqn.py`, `dqn_nstep.py`, `dqn_per.py`, `ppo.py` and `r2d2.py`
(CartPole-v0, dizoo's cartpole configs), -250 for `sac.py` and `td3.py` (dizoo's pendulum
configs), 200 for `ppo_lunarlander.py`, `ppo_lunarlander_continuous.py` and
`apex_dqn_priority_parallel_wandb.py` (dizoo's and `ding.config`'s LunarLander configs), 195
for `apex_dqn_ddp.py` (two ranks, each counting its own env steps). Each
port runs here on the zoo's config for its task (`cartpole-dqn`, `cartpole-ppo`, `pendulum-sac`,
`pendulum-td3`, `cartpole-novel-r2d2`, `simple-spread-mappo`, `lunarlander-ppo`,
`lunarlander-dqn`; the generic `ppo@LunarLanderContinuous-v3`, given `lunarlander-ppo`'s budget
of 1M env steps) with that stop value (`--stop`; `--no-stop` runs the whole budget), capped at
the budget, and prints the env step of the first evaluation at or above the threshold
(`--threshold`, the stop value unless given), and the best and last evaluation. The LunarLander
ports need the [box2d] extra.

Run:  python benchmarks/dingengine_ports.py [--which dqn ppo (the default) dqn-nstep dqn-per
      sac td3 r2d2 mappo cql ppo-lunarlander ppo-lunarlander-continuous apex-dqn-lunarlander
      apex-dqn-ddp]
      [--seed 0] [--stop V | --no-stop] [--threshold V]
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import logging
import pathlib
import re
import sys
import tempfile
from typing import Any, List, Optional, Tuple

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from rlpipe.zoo import get_entry  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Port:
    entry: str  # the config's zoo entry
    module: str  # the test module of the port, imported when it runs
    main: str  # the port's main function in it
    stop: float  # DI-engine's stop_value
    budget: Optional[int] = None  # env steps, where the entry's own is not the run's
    settings: Tuple[Tuple[str, Any], ...] = ()  # (dotted key, value) the example sets itself
    args: Tuple[str, ...] = ()  # main's arguments after cfg: names in rlpipe.policies, or strings


PORTS = {
    "dqn": Port("cartpole-dqn", "test_example_ports", "dqn_main", 195.0),
    "ppo": Port("cartpole-ppo", "test_example_ports", "ppo_main", 195.0),
    "ppo-lunarlander": Port("lunarlander-ppo", "test_ppo_lunarlander", "ppo_lunarlander_main",
                            200.0),
    # dizoo's value weight 0.5 on DI-engine's ½·squared error is rlpipe's value_coef 0.5; the
    # generic entry's standard default is SB3's weight (1.0 on the same loss)
    "ppo-lunarlander-continuous": Port("ppo@LunarLanderContinuous-v3", "test_ppo_lunarlander",
                                       "ppo_lunarlander_main", 200.0, budget=1_000_000,
                                       settings=(("policy.learn.value_coef", 0.5),)),
    # two ranks started by torchrun (DDPContext); both ranks' evaluations; env steps per rank
    "apex-dqn-ddp": Port("cartpole-dqn", "test_apex_dqn_ddp", "apex_dqn_ddp_launch", 195.0),
    # a learner, an evaluator process and a collector (parallel.launch, backend "local")
    "apex-dqn-lunarlander": Port("lunarlander-dqn", "test_apex_dqn", "_launch", 200.0),
    "dqn-nstep": Port("cartpole-dqn", "test_more_ports", "dqn_nstep_main", 195.0,
                      settings=(("policy.learn.nstep", 3),)),
    "dqn-per": Port("cartpole-dqn", "test_more_ports", "dqn_per_main", 195.0),
    # dizoo's pendulum configs stop at -250; the ports end on max_train_iter as DI-engine's
    # sac.py and td3.py do (the entry's budget in updates)
    "sac": Port("pendulum-sac", "test_more_ports", "continuous_main", -250.0,
                args=("SACPolicy", "reparameterization")),
    "td3": Port("pendulum-td3", "test_more_ports", "continuous_main", -250.0,
                args=("TD3Policy", "regression")),
    # dizoo's cartpole_r2d2_config stops at 195 (CartPole-v0); the port runs on the zoo's
    # CartPole without velocities, whose episodes reach 500
    "r2d2": Port("cartpole-novel-r2d2", "test_r2d2_port", "r2d2_main", 195.0),
    # dizoo's ptz_simple_spread_mappo_config stops at 0, a team return no run reaches: the port
    # runs the entry's whole budget (`--threshold -53.2`: the zoo entry's bar)
    "mappo": Port("simple-spread-mappo", "test_mappo_port", "mappo_main", 0.0),
    # offline: dizoo's pendulum_cql_config stops at -250; the port trains the entry's
    # max_train_iter on its data set (made by its recipe, rlpipe.pipelines.recipes, if absent)
    "cql": Port("pendulum-cql", "test_more_ports", "cql_main", -250.0),
}


class _EvalLines(logging.Handler):
    """Collects (env_step, mean return) from the evaluator's log lines: every port logs them
    (those of an evaluator process reach the learner's log), not every port has a logger."""

    # an offline evaluator's lines have no env step
    LINE = re.compile(r"eval at train_iter (\d+)(?:, env_step (\d+))?: mean return (-?[\d.]+|nan)")

    def __init__(self, out: List[Tuple[int, int, float]]) -> None:
        super().__init__(logging.INFO)
        self.out = out

    def emit(self, record: logging.LogRecord) -> None:
        match = self.LINE.search(record.getMessage())
        if match:
            step, env_step, value = match.groups()
            self.out.append((int(step), int(env_step or 0), float(value)))


def _set(cfg: Any, dotted: str, value: Any) -> None:
    *path, last = dotted.split(".")
    for key in path:
        cfg = cfg[key]
    cfg[last] = value


def _arg(name: str) -> Any:
    import rlpipe.policies

    return getattr(rlpipe.policies, name, name)


def _dataset(dataset_id: str) -> Any:
    """The data set `dataset_id`, made first by its recipe's commands where it is absent."""
    import shlex

    from rlpipe.cli import main as rlpipe
    from rlpipe.data import load_dataset, local_datasets
    from rlpipe.pipelines.recipes import RECIPES

    if dataset_id not in local_datasets():
        for line in RECIPES[dataset_id]:
            print(f"making {dataset_id}: {line}", flush=True)
            code = rlpipe(shlex.split(line)[1:] + ["--no-progress"])
            if code:
                raise SystemExit(f"`{line}` exited with {code}")
    return load_dataset(dataset_id)


def run(which: str, seed: int, stop: Optional[float], threshold: float, run_dir: str) -> dict:
    port = PORTS[which]
    main = getattr(importlib.import_module(f"tests.dingengine.{port.module}"), port.main)
    cfg = get_entry(port.entry).resolve()
    cfg.seed, cfg.run_dir, cfg.env.stop_value = seed, run_dir, stop
    if port.budget is not None:
        cfg.max_env_step = port.budget
    for key, value in port.settings:
        _set(cfg, key, value)
    if port.main == "continuous_main":
        cfg.max_train_iter = (cfg.max_env_step * cfg.policy.learn.update_per_collect
                              // cfg.policy.collect.n_sample)
    # the offline port's data set, made first where absent (its recipe's training logs
    # evaluations too, which are not the port's)
    args = ((_dataset(cfg.dataset.id),) if port.main == "cql_main"
            else tuple(map(_arg, port.args)))
    evals: List[Tuple[int, int, float]] = []
    handler = _EvalLines(evals)
    logging.getLogger("rlpipe.middleware.evaluator").addHandler(handler)
    try:
        main(cfg, *args)
    finally:
        logging.getLogger("rlpipe.middleware.evaluator").removeHandler(handler)
    # offline ports count updates (their env step stays 0), online ones env steps
    at = 0 if port.main == "cql_main" else 1
    solved = next((row[at] for row in evals if row[2] >= threshold), None)
    return {"port": which, "entry": port.entry, "seed": seed,
            "budget": cfg.max_train_iter if at == 0 else cfg.max_env_step,
            "counted_in": "train_iter" if at == 0 else "env_step",
            "stop_value": stop, "threshold": threshold, "solved_at": solved,
            "steps": evals[-1][at],
            "best_eval": max(row[2] for row in evals), "last_eval": evals[-1][2],
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
