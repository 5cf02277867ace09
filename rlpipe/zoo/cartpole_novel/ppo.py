"""Feed-forward PPO on CartPole without velocities: the baseline that must fail. With x and θ
alone a memoryless policy cannot tell which way the pole moves; it is expected to
stay below 150 at the budget, where cartpole-novel-ppo-lstm reaches 475.

The same settings as cartpole-ppo (rl-zoo's tuned CartPole PPO) on the masked env, so the
comparison isolates memory (benchmarks/recurrent.py runs both).
"""
import copy
from typing import Any, Dict

from rlpipe.policies import PPOPolicy
from rlpipe.pipelines.onpolicy import run_onpolicy
from rlpipe.zoo.cartpole import ppo as cartpole_ppo
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = copy.deepcopy(cartpole_ppo.config)
config["env"]["id"] = "rlpipe/CartPoleNoVel-v1"

ENTRY = Entry(name="cartpole-novel-ppo", policy_cls=PPOPolicy, config=config,
              runner=run_onpolicy, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
