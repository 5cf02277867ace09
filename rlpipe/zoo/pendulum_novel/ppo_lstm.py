"""LSTM-PPO on Pendulum without its angular velocity (rlpipe/PendulumNoVel-v1: cos θ, sin θ).
Target: mean eval return >= -300 (stop value) within 200k env steps.

Hyperparameters from rl-baselines3-zoo's RecurrentPPO PendulumNoVel-v1 entry (its sb3 model
card): 4 envs × 1024 steps per rollout, 10 epochs, lr 1e-3, gamma 0.9, GAE lambda 0.95,
clip 0.2, no entropy bonus, observation normalisation, LSTM of 64 units with a separate critic
LSTM and one ReLU layer of 64 after it; minibatches of 128 steps (RecurrentPPO's default
batch_size), here whole chunks of 128 steps (32 per rollout). Differences: rl-zoo trains 100k
steps with gSDE exploration (use_sde); we keep PPO's state-independent Gaussian, scale
rewards by 0.1 as pendulum-ppo does, and give the run 200k steps.
The value loss keeps the policy's default weight of 0.5 on ½·squared error, half of RecurrentPPO's (SB3's
vf_coef 0.5 on the mean squared error would be value_coef 1.0 here); the entry was measured so.
"""
from typing import Any, Dict

from rlpipe.policies import PPOLSTMPolicy
from rlpipe.pipelines.onpolicy import run_onpolicy
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = dict(
    max_env_step=200_000,
    env=dict(id="rlpipe/PendulumNoVel-v1", n_envs=4, eval_n_envs=10, stop_value=-300),
    policy=dict(
        model=dict(hidden=(64,), activation="relu", core_size=64, obs_norm=True),
        learn=dict(lr=1e-3, epoch_per_collect=10, batch_size=128, chunk_len=128, gamma=0.9,
                   gae_lambda=0.95, clip_ratio=0.2, reward_scale=0.1, entropy_coef=0.0),
        collect=dict(n_sample=4096),
        eval=dict(evaluator=dict(eval_freq=320, n_episode=10)),  # every rollout
    ),
    ckpt=dict(train_freq=3200),
)

ENTRY = Entry(name="pendulum-novel-ppo-lstm", policy_cls=PPOLSTMPolicy, config=config,
              runner=run_onpolicy, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
