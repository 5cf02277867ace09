"""BC on CartPole-v1 from data set cartpole/medium-v0: clones the behaviour policy's actions.

Cross-entropy on the data's actions, a 256-256 MLP, Adam 3e-4, batch 256, 3000 updates (the
TD3+BC paper's BC settings; a medium data set of ~20k transitions is learned in ~30 passes).
Train on another data set with `--set dataset.id=ID`. The default data set is made by:
"""
from typing import Any, Dict

from rlpipe.policies import BCPolicy
from rlpipe.pipelines.offline import run_offline
from rlpipe.pipelines.recipes import recipe_text
from rlpipe.zoo.registry import Entry

DATASET = "cartpole/medium-v0"
__doc__ += recipe_text(DATASET)

config: Dict[str, Any] = dict(
    max_train_iter=3000,
    dataset=dict(id=DATASET),
    env=dict(id="CartPole-v1", eval_n_envs=10, stop_value=None),
    policy=dict(
        model=dict(hidden=(256, 256)),
        learn=dict(batch_size=256, lr=3e-4),
        eval=dict(evaluator=dict(eval_freq=1000, n_episode=10)),
    ),
)

ENTRY = Entry(name="cartpole-bc", policy_cls=BCPolicy, config=config,
              runner=run_offline, pipeline="offline", doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
