"""Feed-forward PPO on CartPole without velocities: the baseline that must fail. With x and θ
alone a memoryless policy cannot tell which way the pole moves; the issue (#15) expects it to
stay below 150 at the budget, where cartpole-novel-ppo-lstm reaches 475.

The same settings as cartpole-ppo (rl-zoo's tuned CartPole PPO) on the masked env, so the
comparison isolates memory (benchmarks/recurrent.py runs both).
"""
from typing import Any, Dict

from rlpipe.policies import PPOPolicy
from rlpipe.zoo._onpolicy import resolve_config, run_onpolicy

POLICY = PPOPolicy

config: Dict[str, Any] = dict(
    max_env_step=100_000,
    env=dict(id="rlpipe/CartPoleNoVel-v1", n_envs=8, eval_n_envs=10, stop_value=475),
    policy=dict(
        model=dict(hidden=(64, 64)),
        learn=dict(lr=1e-3, lr_schedule="linear", epoch_per_collect=20, batch_size=256,
                   gamma=0.98, gae_lambda=0.8, clip_ratio=0.2, entropy_coef=0.0),
        collect=dict(n_sample=256),
        eval=dict(evaluator=dict(eval_freq=100, n_episode=10)),  # every 5 rollouts
    ),
    ckpt=dict(train_freq=2000),
)


def main(cfg: Any) -> Dict[str, Any]:
    return run_onpolicy(cfg, PPOPolicy)


if __name__ == "__main__":
    print(main(resolve_config(PPOPolicy, config)))
