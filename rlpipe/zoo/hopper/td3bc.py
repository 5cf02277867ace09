"""TD3+BC on MuJoCo Hopper-v5 from data set hopper/medium-v0 (a config and a smoke test only).

The paper's D4RL settings (Fujimoto & Gu 2021): 256-256 MLPs, Adam 3e-4, batch 256, α = 2.5,
states normalised by the data set, 1M updates (hours here). Needs the [mujoco] extra. Train on
another data set with `--set dataset.id=ID`. The default data set (D4RL-style medium) is made by:
"""
from typing import Any, Dict

from rlpipe.policies import TD3BCPolicy
from rlpipe.pipelines.offline import run_offline
from rlpipe.pipelines.recipes import recipe_text
from rlpipe.zoo.registry import Entry

DATASET = "hopper/medium-v0"
__doc__ += recipe_text(DATASET)

config: Dict[str, Any] = dict(
    max_train_iter=1_000_000,
    dataset=dict(id=DATASET),
    env=dict(id="Hopper-v5", eval_n_envs=5, stop_value=None),
    policy=dict(
        learn=dict(batch_size=256, alpha=2.5),
        eval=dict(evaluator=dict(eval_freq=5000, n_episode=10)),
    ),
)

ENTRY = Entry(name="hopper-td3bc", policy_cls=TD3BCPolicy, config=config,
              runner=run_offline, pipeline="offline", requires={"mujoco": "mujoco"}, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
