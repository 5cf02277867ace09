"""IQL on MuJoCo Hopper-v5 from data set hopper/medium-v0 (a config and a smoke test only).

The paper's D4RL locomotion settings (Kostrikov et al. 2021): 256-256 MLPs, Adam 3e-4, batch
256, expectile 0.7, β = 3, weights clipped at 100, cosine actor lr over 1M updates (hours here),
rewards × 1000 / (max − min episode return of the data set).
Needs the [mujoco] extra. Train on another data set with `--set dataset.id=ID`. The default data
set (D4RL-style medium) is made by:
"""
from typing import Any, Dict

from rlpipe.policies import IQLPolicy
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
        learn=dict(batch_size=256, expectile=0.7, beta=3.0, max_weight=100.0,
                   actor_lr_cosine_steps=1_000_000, reward_norm="return_range"),
        eval=dict(evaluator=dict(eval_freq=5000, n_episode=10)),
    ),
)

ENTRY = Entry(name="hopper-iql", policy_cls=IQLPolicy, config=config,
              runner=run_offline, pipeline="offline", requires={"mujoco": "mujoco"}, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
