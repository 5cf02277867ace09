"""PPO on MuJoCo HalfCheetah-v5 (needs the [mujoco] extra).

rl-zoo3's tuned HalfCheetah PPO (``hyperparams/ppo.yml``): one env × 512 steps per rollout, 20
epochs of minibatches of 64, Adam 2.0633e-5, γ 0.98, GAE λ 0.92, clip 0.1, entropy 4.0e-4, value
coefficient 0.581 on the mean squared error (1.162 on rlpipe's ½·squared error), gradient norm
0.8, separate [256, 256] ReLU actor and critic, initial log-std −2, normalised observations.
rl-zoo3's run scores 5,819 after 1M env steps (HalfCheetah-v3). Not reproduced: its reward
normalisation (VecNormalize) and its non-orthogonal initialisation.
"""
from typing import Any, Dict

from rlpipe.policies import PPOPolicy
from rlpipe.pipelines.onpolicy import run_onpolicy
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = dict(
    max_env_step=1_000_000,
    env=dict(id="HalfCheetah-v5", n_envs=1, eval_n_envs=5, stop_value=None),
    policy=dict(
        device="auto",
        model=dict(hidden=(256, 256), activation="relu", init_log_std=-2.0, obs_norm=True),
        learn=dict(lr=2.0633e-5, epoch_per_collect=20, batch_size=64, gamma=0.98,
                   gae_lambda=0.92, clip_ratio=0.1, entropy_coef=0.000401762,
                   value_coef=1.16192, grad_clip=0.8),
        collect=dict(n_sample=512),
        eval=dict(evaluator=dict(eval_freq=3200, n_episode=10)),  # every 20 rollouts
    ),
    ckpt=dict(train_freq=3200),
)

ENTRY = Entry(name="halfcheetah-ppo", policy_cls=PPOPolicy, config=config,
              runner=run_onpolicy, requires={"mujoco": "mujoco"}, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
