"""LSTM-PPO on MiniGrid-MemoryS7-v0 with the Dict observation (image + direction): the agent
sees an object in the start room, walks down a corridor and must step next to the matching
one of two objects at its end, by then out of sight — a memory task. Choosing at random earns
about half the reward (a memoryless policy's ceiling), so the bar is a mean eval return of 0.8
within 1M env steps (not yet measured: the budget is an estimate from the corridor's length).

Settings in the spirit of rl-starter-files' MiniGrid PPO (16 envs × 128 steps, 4 epochs, lr
7e-4, here decaying linearly, entropy bonus 0.01), with one encoder and one LSTM of 128 units
shared by actor and critic, and truncated BPTT over chunks of 32 steps.
"""
from typing import Any, Dict

from rlpipe.policies import PPOLSTMPolicy
from rlpipe.pipelines.onpolicy import run_onpolicy
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = dict(
    max_env_step=1_000_000,
    env=dict(id="MiniGrid-MemoryS7-v0", n_envs=16, eval_n_envs=10, stop_value=0.8, mode="sync"),
    policy=dict(
        model=dict(hidden=(64,), activation="relu", share_encoder=True, core_size=128),
        learn=dict(lr=7e-4, lr_schedule="linear", epoch_per_collect=4, batch_size=256,
                   chunk_len=32, gamma=0.99, gae_lambda=0.95, clip_ratio=0.2,
                   entropy_coef=0.01, value_coef=0.5, grad_clip=0.5),
        collect=dict(n_sample=2048),
        eval=dict(evaluator=dict(eval_freq=320, n_episode=20)),  # every 10 rollouts (20k steps)
    ),
    ckpt=dict(train_freq=640),
)

ENTRY = Entry(name="minigrid-memory-ppo-lstm", policy_cls=PPOLSTMPolicy, config=config,
              runner=run_onpolicy, requires={"minigrid": "minigrid"}, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
