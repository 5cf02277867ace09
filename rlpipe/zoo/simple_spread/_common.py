"""What the simple_spread entries share: the env, the budget and Yu et al.'s MPE settings.

Yu et al. 2022 ("The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games") train
MPE Spread with 128 envs × 25 steps per update (3,200 env steps), 10 PPO epochs over one
minibatch, lr 7e-4 for actor and critic, a final-layer gain of 0.01, 64-unit ReLU MLPs and 20M
env steps (their train_mpe_spread.sh and config.py, checked with the repository's text). The
policy defaults (rlpipe/policies/mappo.py) carry those; what changes here is the budget: 8
envs × 100 steps (4 episodes each) per update, 70k env steps, about five minutes on this 2-core
machine under load. At that budget the one minibatch of the paper makes too few gradient steps
(10 per 800 env steps; the paper makes 6,250 updates of 3,200 steps): 4 minibatches (40 steps
per update) did best of what was tried (seed 0, 60k env steps, final eval team return): −53.2,
against −55.0 for lr 2e-3, −58.6 for one-episode rollouts (8 × 25 steps), −58.7 for 4
minibatches without value clipping (faster early, same plateau), −64.3 for 4 minibatches with
LayerNorm, −63.5 for 4 minibatches at lr 2e-3, and −70 at 42k for 8 minibatches × 15 epochs.
Over 5 seeds at 70k (benchmarks/marl.py) the entries reach −60.1 (MAPPO) and −67.6 (IPPO),
short of the issue's bar (−53.2): see docs/multi_agent.md.
Rewards are mpe2's: per agent 0.5 × (−Σ landmark distance to its nearest agent) +
0.5 × (−1 per collision), so the team return (the sum over agents) is 1.5 × the distance term
minus half the collisions; benchmarks/marl.py converts the published figure to this scale.
"""
from typing import Any, Dict

REQUIRES = {"pettingzoo": "marl", "mpe2": "marl"}  # import name -> rlpipe extra
ENV_ID = "mpe2/simple_spread_v3"


def spread_config(continuous: bool = False) -> Dict[str, Any]:
    """The run config of a simple_spread entry (`continuous`: Box actions in [0, 1]^5)."""
    return dict(
        max_env_step=70_000,
        env=dict(id=ENV_ID, n_envs=8, eval_n_envs=8,
                 env_kwargs=dict(N=3, max_cycles=25, continuous_actions=continuous)),
        policy=dict(
            collect=dict(n_sample=800),  # 8 envs × 100 steps: 32 episodes per update
            learn=dict(n_minibatches=4),  # 10 epochs × 4 = 40 gradient steps per update
            eval=dict(evaluator=dict(eval_freq=800, n_episode=32)),  # every 20 updates
        ),
        ckpt=dict(train_freq=4000),  # every 100 updates (80k env steps)
    )
