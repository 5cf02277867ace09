"""PPO on MiniGrid-DoorKey-5x5 with the Dict observation (image + direction; the mission text is
left out): the 7×7×3 grid of object/colour/state ids (scaled by their largest values) through
the small 2×2 conv trunk, the direction one-hot, one shared encoder for actor and critic.

Target: mean eval return >= 0.85 within 500k env steps. Hyperparameters in the spirit of
rl-starter-files' MiniGrid PPO (16 envs × 128 steps per rollout, 4 epochs, minibatches of 256,
lr 7e-4 decaying linearly over the budget, entropy bonus 0.01; with a constant lr the greedy
evaluation collapsed late in a 200k run, see docs/spaces_observations.md).
`--set env.id=MiniGrid-Empty-5x5-v0` (or any other MiniGrid id) trains the same model on another
grid.
"""
from typing import Any, Dict

from rlpipe.policies import PPOPolicy
from rlpipe.pipelines.onpolicy import run_onpolicy
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = dict(
    max_env_step=500_000,
    env=dict(id="MiniGrid-DoorKey-5x5-v0", n_envs=16, eval_n_envs=10, stop_value=0.85,
             mode="sync"),
    policy=dict(
        model=dict(hidden=(64,), activation="relu", share_encoder=True),
        learn=dict(lr=7e-4, lr_schedule="linear", epoch_per_collect=4, batch_size=256, gamma=0.99, gae_lambda=0.95,
                   clip_ratio=0.2, entropy_coef=0.01, value_coef=0.5, grad_clip=0.5),
        collect=dict(n_sample=2048),
        eval=dict(evaluator=dict(eval_freq=320, n_episode=20)),  # every 10 rollouts (20k steps)
    ),
    ckpt=dict(train_freq=640),
)

ENTRY = Entry(name="minigrid-doorkey-ppo", policy_cls=PPOPolicy, config=config,
              runner=run_onpolicy, requires={"minigrid": "minigrid"}, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
