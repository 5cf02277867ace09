"""IQL on Pendulum-v1 from data set pendulum/medium-replay-v0 (expectile 0.7, β = 3).

IQL with the paper's settings (Kostrikov et al. 2021: expectile 0.7, β = 3, weights clipped at
100, target Polyak 0.005, cosine actor lr, rewards × 1000 / (max − min episode return)) on the
networks of rlpipe's own pendulum-sac, which made the data, as pendulum-td3bc and pendulum-cql
use: 64-64 MLPs, Adam 1e-3, batch 128. On the tests' noisy-expert data (3 000 transitions,
behaviour −185) it reaches −212 in 2 000 updates. On this medium-replay data it does not learn
to balance (−1142 to −1306 on 5 seeds): advantage-weighted regression on the data's own
actions tops out at about −815 even with oracle advantages, because the data's actions near
upright are not the ones balancing needs (benchmarks/offline_iql_diagnosis.py,
docs/offline.md "Results"). 8 000 updates. Train on another data set with
`--set dataset.id=ID`. The default data set is made by:
"""
from typing import Any, Dict

from rlpipe.policies import IQLPolicy
from rlpipe.pipelines.offline import run_offline
from rlpipe.pipelines.recipes import recipe_text
from rlpipe.zoo.registry import Entry

DATASET = "pendulum/medium-replay-v0"
__doc__ += recipe_text(DATASET)

config: Dict[str, Any] = dict(
    max_train_iter=8000,
    dataset=dict(id=DATASET),
    env=dict(id="Pendulum-v1", eval_n_envs=5, stop_value=None),
    policy=dict(
        model=dict(actor_hidden=(64, 64), critic_hidden=(64, 64), value_hidden=(64, 64)),
        learn=dict(batch_size=128, actor_lr=1e-3, critic_lr=1e-3, value_lr=1e-3, tau=0.005,
                   expectile=0.7, beta=3.0, max_weight=100.0, actor_lr_cosine_steps=8000,
                   reward_norm="return_range"),
        eval=dict(evaluator=dict(eval_freq=2000, n_episode=10)),
    ),
)

ENTRY = Entry(name="pendulum-iql", policy_cls=IQLPolicy, config=config,
              runner=run_offline, pipeline="offline", doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
