"""TD3 on Pendulum-v1: a mean eval return of -200 or more within 30k env steps.

One env, one update per env step (32 updates after every 32 steps), 1000 uniformly random
warm-up steps, exploration noise 0.1 of the half-range; see docs/algorithms.md.
"""
from typing import Any, Dict

from rlpipe.policies import TD3Policy
from rlpipe.pipelines.offpolicy import run_offpolicy
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = dict(
    max_env_step=30_000,
    env=dict(id="Pendulum-v1", n_envs=1, eval_n_envs=5, stop_value=-200),
    replay=dict(capacity=100_000, min_samples=1000),
    policy=dict(
        model=dict(actor_hidden=(64, 64), critic_hidden=(64, 64)),
        learn=dict(batch_size=128, gamma=0.99, tau=0.005, actor_lr=1e-3, critic_lr=1e-3,
                   policy_delay=2, target_noise=0.2, target_noise_clip=0.5,
                   update_per_collect=32),
        collect=dict(n_sample=32, random_collect_size=1000, noise_scale=0.1),
        eval=dict(evaluator=dict(eval_freq=500, n_episode=5)),
    ),
)

ENTRY = Entry(name="pendulum-td3", policy_cls=TD3Policy, config=config,
              runner=run_offpolicy, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
