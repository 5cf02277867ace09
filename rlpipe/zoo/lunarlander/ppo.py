"""PPO on LunarLander-v3 (needs the [box2d] extra; stop at a mean eval return of 200).

Hyperparameters follow rl-zoo's tuned LunarLander PPO (16 envs × 1024 steps per rollout,
minibatches of 64, 4 epochs, gamma 0.999, GAE lambda 0.98, entropy bonus 0.01).
The value loss keeps PPOPolicy's weight of 0.5 on ½·squared error, half of rl-zoo's (SB3's
vf_coef 0.5 on the mean squared error would be value_coef 1.0 here); the entry was measured so.
"""
from typing import Any, Dict

from rlpipe.policies import PPOPolicy
from rlpipe.pipelines.onpolicy import run_onpolicy
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = dict(
    max_env_step=1_000_000,
    env=dict(id="LunarLander-v3", n_envs=16, eval_n_envs=10, stop_value=200),
    policy=dict(
        model=dict(hidden=(64, 64)),
        learn=dict(lr=3e-4, epoch_per_collect=4, batch_size=64, gamma=0.999, gae_lambda=0.98,
                   clip_ratio=0.2, entropy_coef=0.01),
        collect=dict(n_sample=16_384),
        eval=dict(evaluator=dict(eval_freq=2048, n_episode=10)),  # every 2 rollouts
    ),
    ckpt=dict(train_freq=10_240),
)

ENTRY = Entry(name="lunarlander-ppo", policy_cls=PPOPolicy, config=config,
              runner=run_onpolicy, requires={"Box2D": "box2d"}, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
