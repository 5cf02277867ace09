"""BC on CartPole-v1 from data set cartpole/medium-v0: clones the behaviour policy's actions.

Cross-entropy on the data's actions, a 256-256 MLP, Adam 3e-4, batch 256, 3000 updates (the
TD3+BC paper's BC settings; a medium data set of ~20k transitions is learned in ~30 passes).
Train on another data set with `--set dataset.id=ID`. The default data set is made by:
"""
from typing import Any, Dict

from rlpipe.policies import BCPolicy
from rlpipe.pipelines.offline import resolve_config, run_offline
from rlpipe.pipelines.recipes import recipe_text

POLICY = BCPolicy
PIPELINE = "offline"
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


def main(cfg: Any) -> Dict[str, Any]:
    return run_offline(cfg, BCPolicy)


if __name__ == "__main__":
    print(main(resolve_config(BCPolicy, config)))
