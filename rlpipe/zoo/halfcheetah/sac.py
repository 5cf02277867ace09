"""SAC on MuJoCo HalfCheetah-v5 (needs the [mujoco] extra; stop at a mean eval return of 8000).

rl-zoo3's HalfCheetah SAC (``hyperparams/sac.yml``; Haarnoja et al. 2018's settings): [256, 256],
Adam 3e-4 for actor, critics and α, batch 256, γ 0.99, τ 0.005, automatic entropy tuning, a
1M-transition replay, 10k uniformly random warm-up steps, one update per env step (64 after
every 64 steps here). rl-zoo3's run scores 9,535 after 1M env steps (HalfCheetah-v3).
"""
from typing import Any, Dict

from rlpipe.policies import SACPolicy
from rlpipe.zoo._offpolicy import resolve_config, run_offpolicy

POLICY = SACPolicy
REQUIRES = {"mujoco": "mujoco"}  # import name -> rlpipe extra

config: Dict[str, Any] = dict(
    max_env_step=1_000_000,
    env=dict(id="HalfCheetah-v5", n_envs=1, eval_n_envs=5, stop_value=8000),
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


def main(cfg: Any) -> Dict[str, Any]:
    return run_offpolicy(cfg, SACPolicy)


if __name__ == "__main__":
    print(main(resolve_config(SACPolicy, config)))
