"""DQN on CartPole-v1: solves (mean eval return >= 475) within 50k env steps.

Hyperparameters follow rl-zoo's tuned CartPole DQN (lr 2.3e-3, batch 64, [256, 256],
target copied after every burst of 128 updates per 256 env steps, eps 1 → 0.04), see docs/zoo.md.
"""
from typing import Any, Dict

from rlpipe.policies import DQNPolicy
from rlpipe.pipelines.offpolicy import run_offpolicy
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = dict(
    max_env_step=50_000,
    env=dict(id="CartPole-v1", n_envs=8, eval_n_envs=10, stop_value=475),
    replay=dict(capacity=100_000, min_samples=1000),
    policy=dict(
        model=dict(hidden=(256, 256)),
        learn=dict(lr=2.3e-3, batch_size=64, gamma=0.99, update_per_collect=128,
                   target_update_freq=128),
        collect=dict(n_sample=256, random_collect_size=1000),
        other=dict(eps=dict(type="linear", start=1.0, end=0.04, decay=8000)),
        eval=dict(evaluator=dict(eval_freq=512, n_episode=10)),
    ),
)

ENTRY = Entry(name="cartpole-dqn", policy_cls=DQNPolicy, config=config,
              runner=run_offpolicy, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
