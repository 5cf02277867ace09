"""SAC on MuJoCo Hopper-v5 (needs the [mujoco] extra; stop at a mean eval return of 3000).

The usual SAC settings for MuJoCo locomotion (Haarnoja et al. 2018; rl-zoo): [256, 256],
Adam 3e-4, batch 256, tau 0.005, 10k random warm-up steps, one update per env step.
rl-zoo3's run of these settings scores 2,326 after 1M env steps (Hopper-v3).
"""
from typing import Any, Dict

from rlpipe.policies import SACPolicy
from rlpipe.pipelines.offpolicy import run_offpolicy
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = dict(
    max_env_step=1_000_000,
    env=dict(id="Hopper-v5", n_envs=1, eval_n_envs=5, stop_value=3000),
    replay=dict(capacity=1_000_000, min_samples=10_000),
    policy=dict(
        device="auto",
        model=dict(actor_hidden=(256, 256), critic_hidden=(256, 256)),
        learn=dict(batch_size=256, gamma=0.99, tau=0.005, actor_lr=3e-4, critic_lr=3e-4,
                   alpha_lr=3e-4, update_per_collect=64),
        collect=dict(n_sample=64, random_collect_size=10_000),
        eval=dict(evaluator=dict(eval_freq=10_000, n_episode=10)),
    ),
)

ENTRY = Entry(name="hopper-sac", policy_cls=SACPolicy, config=config,
              runner=run_offpolicy, requires={"mujoco": "mujoco"}, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
