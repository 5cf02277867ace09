"""TD3+BC on Pendulum-v1 from data set pendulum/medium-replay-v0 (states normalised by the data).

TD3+BC (Fujimoto & Gu 2021: TD3, policy noise 0.2 clipped at 0.5, actor every 2 updates, BC
term, states normalised by the data set) with the settings of rlpipe's own pendulum-sac, which
made the data: 64-64 MLPs, Adam 1e-3, batch 128, and α = 100 instead of the paper's 2.5. On
the mostly random medium-replay data the paper's α (and 256-256, 3e-4, batch 256) keeps the
actor at the data's average action (−1217 after 3 000 updates, α = 20: −861); with these, seed
0 is at −299 after 6 000 updates and −116 after 8 000. 8 000 updates. Train on another data
set with `--set dataset.id=ID`. The default data set is made by:
"""
from typing import Any, Dict

from rlpipe.policies import TD3BCPolicy
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
        model=dict(actor_hidden=(64, 64), critic_hidden=(64, 64)),
        learn=dict(batch_size=128, actor_lr=1e-3, critic_lr=1e-3, alpha=100.0),
        eval=dict(evaluator=dict(eval_freq=2000, n_episode=10)),
    ),
)

ENTRY = Entry(name="pendulum-td3bc", policy_cls=TD3BCPolicy, config=config,
              runner=run_offline, pipeline="offline", doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
