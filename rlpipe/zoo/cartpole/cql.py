"""Discrete CQL on CartPole-v1 from data set cartpole/medium-v0: DQN kept below the data's Q.

DQN's update (double Q, Huber, target copied every 100 updates, Adam 3e-4, batch 256, a 256-256
MLP) plus α = 1 times the CQL(H) gap (Kumar et al. 2020; α = 1 is d3rlpy's DiscreteCQL
default), 5000 updates. Train on another data set with `--set dataset.id=ID`. The default data
set is made by:
"""
from typing import Any, Dict

from rlpipe.policies import DiscreteCQLPolicy
from rlpipe.pipelines.offline import run_offline
from rlpipe.pipelines.recipes import recipe_text
from rlpipe.zoo.registry import Entry

DATASET = "cartpole/medium-v0"
__doc__ += recipe_text(DATASET)

config: Dict[str, Any] = dict(
    max_train_iter=5000,
    dataset=dict(id=DATASET),
    env=dict(id="CartPole-v1", eval_n_envs=10, stop_value=None),
    policy=dict(
        model=dict(hidden=(256, 256)),
        learn=dict(batch_size=256, lr=3e-4, target_update_freq=100, cql_alpha=1.0),
        eval=dict(evaluator=dict(eval_freq=1000, n_episode=10)),
    ),
)

ENTRY = Entry(name="cartpole-cql", policy_cls=DiscreteCQLPolicy, config=config,
              runner=run_offline, pipeline="offline", doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
