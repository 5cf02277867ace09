"""What the simple_spread entries share: the env, the budget and Yu et al.'s MPE settings.

Yu et al. 2022 ("The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games") train
MPE Spread with 128 envs × 25 steps per update (3,200 env steps), 10 PPO epochs over one
minibatch, lr 7e-4 for actor and critic, a final-layer gain of 0.01, 64-unit ReLU MLPs and 20M
env steps (their train_mpe_spread.sh and config.py, checked with the repository's text). The
policy defaults (rlpipe/policies/mappo.py) carry those; what changes here is the budget: 8
envs × 100 steps (4 episodes each) per update, 100k env steps, which trains in about two minutes on a
2-core CPU. Rewards are mpe2's: per agent 0.5 × (−Σ landmark distance to its nearest agent)
+ 0.5 × (−1 per collision), so the team return (the sum over agents) is 1.5 × the distance
term minus half the collisions; benchmarks/marl.py converts the paper's figure to this scale.
"""
from typing import Any, Dict

REQUIRES = {"pettingzoo": "marl", "mpe2": "marl"}  # import name -> rlpipe extra
ENV_ID = "mpe2/simple_spread_v3"


def spread_config(continuous: bool = False) -> Dict[str, Any]:
    """The run config of a simple_spread entry (`continuous`: Box actions in [0, 1]^5)."""
    return dict(
        max_env_step=100_000,
        env=dict(id=ENV_ID, n_envs=8, eval_n_envs=8,
                 env_kwargs=dict(N=3, max_cycles=25, continuous_actions=continuous)),
        policy=dict(
            collect=dict(n_sample=800),  # 8 envs × 100 steps: 32 episodes per update
            eval=dict(evaluator=dict(eval_freq=200, n_episode=32)),  # every 20 updates
        ),
        ckpt=dict(train_freq=1000),  # every 100 updates (80k env steps)
    )
