"""BC on Pendulum-v1 from data set pendulum/medium-replay-v0: regresses the data's actions.

Deterministic MSE onto the data's actions, a 256-256 MLP, Adam 3e-4, batch 256, 5000 updates
(the TD3+BC paper's BC settings): the baseline the offline RL entries must beat on replay data.
Train on another data set with `--set dataset.id=ID`. The default data set is made by:
"""
from typing import Any, Dict

from rlpipe.policies import BCPolicy
from rlpipe.pipelines.offline import run_offline
from rlpipe.pipelines.recipes import recipe_text
from rlpipe.zoo.registry import Entry

DATASET = "pendulum/medium-replay-v0"
__doc__ += recipe_text(DATASET)

config: Dict[str, Any] = dict(
    max_train_iter=5000,
    dataset=dict(id=DATASET),
    env=dict(id="Pendulum-v1", eval_n_envs=5, stop_value=None),
    policy=dict(
        model=dict(hidden=(256, 256)),
        learn=dict(batch_size=256, lr=3e-4, loss="mse"),
        eval=dict(evaluator=dict(eval_freq=2500, n_episode=10)),
    ),
)

ENTRY = Entry(name="pendulum-bc", policy_cls=BCPolicy, config=config,
              runner=run_offline, pipeline="offline", doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
