"""PPO on Pendulum-v1 (continuous torque; stop at a mean eval return of -200).

Settings after rl-zoo's Pendulum PPO (gamma 0.9, lr 1e-3, 10 epochs) with a constant reward
scale (0.1) and observation normalisation in place of its VecNormalize; every episode is
truncated at 200 steps, so the truncation bootstrap from the final observation matters here.
The value loss keeps PPOPolicy's weight of 0.5 on ½·squared error, half of rl-zoo's (SB3's
vf_coef 0.5 on the mean squared error would be value_coef 1.0 here); the entry was measured so.
"""
from typing import Any, Dict

from rlpipe.policies import PPOPolicy
from rlpipe.pipelines.onpolicy import run_onpolicy
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = dict(
    max_env_step=200_000,
    env=dict(id="Pendulum-v1", n_envs=4, eval_n_envs=10, stop_value=-200),
    policy=dict(
        model=dict(hidden=(64, 64), obs_norm=True),
        learn=dict(lr=1e-3, lr_schedule="linear", epoch_per_collect=10, batch_size=64,
                   gamma=0.9, gae_lambda=0.95, clip_ratio=0.2, reward_scale=0.1,
                   entropy_coef=0.0),
        collect=dict(n_sample=4096),
        eval=dict(evaluator=dict(eval_freq=640, n_episode=10)),  # every rollout
    ),
    ckpt=dict(train_freq=6400),
)

ENTRY = Entry(name="pendulum-ppo", policy_cls=PPOPolicy, config=config,
              runner=run_onpolicy, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
