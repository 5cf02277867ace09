"""LSTM-PPO on CartPole without velocities (rlpipe/CartPoleNoVel-v1: x and θ only): the policy
must infer the velocities from its memory. Target: mean eval return >= 475 within 100k steps.

Hyperparameters from rl-baselines3-zoo's RecurrentPPO (`ppo_lstm`) CartPoleNoVel-v1 entry, as
published with its sb3 model card: 8 envs × 32 steps per rollout, batch 256 (one minibatch),
20 epochs, lr 1e-3 decaying linearly, gamma 0.98, GAE lambda 0.8, no entropy bonus, observation
normalisation (its VecNormalize norm_obs), LSTM of 64 units with a separate critic LSTM, one
ReLU layer of 64 after it for actor and critic. Differences: its clip range also decays
linearly (ours stays at 0.2) and it does not use orthogonal init. One chunk per env per
rollout (chunk_len 32 = the rollout length). benchmarks/recurrent.py measures it over seeds.
The value loss keeps the policy's default weight of 0.5 on ½·squared error, half of RecurrentPPO's (SB3's
vf_coef 0.5 on the mean squared error would be value_coef 1.0 here); the entry was measured so.
"""
from typing import Any, Dict

from rlpipe.policies import PPOLSTMPolicy
from rlpipe.pipelines.onpolicy import run_onpolicy
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = dict(
    max_env_step=100_000,
    env=dict(id="rlpipe/CartPoleNoVel-v1", n_envs=8, eval_n_envs=10, stop_value=475),
    policy=dict(
        model=dict(hidden=(64,), activation="relu", core_size=64, core_kind="lstm",
                   obs_norm=True),
        learn=dict(lr=1e-3, lr_schedule="linear", epoch_per_collect=20, batch_size=256,
                   chunk_len=32, gamma=0.98, gae_lambda=0.8, clip_ratio=0.2, entropy_coef=0.0),
        collect=dict(n_sample=256),
        eval=dict(evaluator=dict(eval_freq=100, n_episode=10)),  # every 5 rollouts
    ),
    ckpt=dict(train_freq=2000),
)

ENTRY = Entry(name="cartpole-novel-ppo-lstm", policy_cls=PPOLSTMPolicy, config=config,
              runner=run_onpolicy, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
