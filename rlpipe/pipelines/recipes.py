"""The data sets the offline zoo entries train on by default, and the commands that make them.

Each recipe is the list of `rlpipe` command lines that makes its data set from rlpipe's own zoo
policies; the entries' docstrings name them and `benchmarks/offline.py` runs them (with its own
run folders). `rlpipe train ENTRY --set dataset.id=ID` trains on any other data set.
"""
from __future__ import annotations

from typing import Dict, Tuple

__all__ = ["RECIPES", "recipe_text"]

RECIPES: Dict[str, Tuple[str, ...]] = {
    # a cartpole-dqn policy stopped at a mean eval return of 200 or more, rolled with 20% random
    # actions: behaviour mean return 150-300 ("medium")
    "cartpole/medium-v0": (
        "rlpipe train cartpole-dqn --run-dir runs/cartpole-dqn-medium --set env.stop_value=200",
        "rlpipe dataset collect runs/cartpole-dqn-medium --episodes 100 --eps 0.2 "
        "--id cartpole/medium-v0",
    ),
    # D4RL's "medium-replay": all the data a pendulum-sac run saw until its policy was "medium",
    # i.e. its whole replay buffer at the first evaluation (5 episodes, every 200 updates, so
    # about every 224 env steps) with a mean return of -700 or more. Seeds 0-2 all stop there at
    # env step 3264 (evaluations of -870 then -554/-612/-326): 17 episodes, 3264 transitions,
    # behaviour mean return about -1270.
    "pendulum/medium-replay-v0": (
        "rlpipe train pendulum-sac --run-dir runs/pendulum-sac-medium --seed 0 "
        "--set env.stop_value=-700 --set policy.eval.evaluator.eval_freq=200",
        "rlpipe dataset collect --from-replay runs/pendulum-sac-medium "
        "--id pendulum/medium-replay-v0",
    ),
    # D4RL-style "medium": a hopper-sac policy stopped at about a third of expert return,
    # rolled with a little Gaussian noise for 1M transitions (hours on a CPU)
    "hopper/medium-v0": (
        "rlpipe train hopper-sac --run-dir runs/hopper-sac-medium --set env.stop_value=1500",
        "rlpipe dataset collect runs/hopper-sac-medium --episodes 2000 --noise 0.1 "
        "--id hopper/medium-v0",
    ),
}


def recipe_text(dataset_id: str) -> str:
    """The commands that make `dataset_id`, one per line (a KeyError names the known ids)."""
    if dataset_id not in RECIPES:
        raise KeyError(f"no recipe for data set {dataset_id!r}; known: {', '.join(RECIPES)}")
    return "\n".join(f"    {line}" for line in RECIPES[dataset_id])
