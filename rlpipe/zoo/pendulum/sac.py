"""SAC on Pendulum-v1: a mean eval return of -200 or more within 20k env steps.

One env, one update per env step (32 updates after every 32 steps), 1000 uniformly random
warm-up steps, Adam at 1e-3 (as rl-zoo's tuned Pendulum SAC); see docs/algorithms.md.
"""
from typing import Any, Dict

from rlpipe.policies import SACPolicy
from rlpipe.pipelines.offpolicy import run_offpolicy
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = dict(
    max_env_step=20_000,
    env=dict(id="Pendulum-v1", n_envs=1, eval_n_envs=5, stop_value=-200),
    replay=dict(capacity=100_000, min_samples=1000),
    policy=dict(
        model=dict(actor_hidden=(64, 64), critic_hidden=(64, 64)),
        learn=dict(batch_size=128, gamma=0.99, tau=0.005, actor_lr=1e-3, critic_lr=1e-3,
                   alpha_lr=1e-3, update_per_collect=32),
        collect=dict(n_sample=32, random_collect_size=1000),
        eval=dict(evaluator=dict(eval_freq=500, n_episode=5)),
    ),
)

ENTRY = Entry(name="pendulum-sac", policy_cls=SACPolicy, config=config,
              runner=run_offpolicy, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
