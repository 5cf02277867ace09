"""What the simple_spread entries share: the env, the budget and Yu et al.'s MPE settings.

Yu et al. 2022 ("The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games") train
MPE Spread with 128 envs × 25 steps per update (3,200 env steps), 10 PPO epochs over one
minibatch, lr 7e-4 for actor and critic, a final-layer gain of 0.01, 64-unit ReLU MLPs and 20M
env steps (their train_mpe_spread.sh and config.py, checked with the repository's text). The
policy defaults (rlpipe/policies/mappo.py) carry those; what changes here is the budget and
two settings: 16 envs × 100 steps (4 episodes each, 1,600 env steps) per update, 160k env
steps (about 3 minutes on this 2-core machine under load), 4 minibatches (the paper's one
makes too few gradient steps at this budget: it makes 6,250 updates, this 100) and γ 0.95
(episodes last 25 steps; γ 0.99 reached the same level later). Tried on seed 0 (final eval
team return; eval curve every 16-32k env steps): 8 envs × 100 steps, γ 0.99, 200k: −55.4
(−53 to −57 from 100k on); 16 envs, γ 0.99, 160k: −54.8 (−61.2 at 66k); the same with γ
0.95, 128k: −54.1 (−55.1 at 66k); with entropy 0.001 instead of 0.01: −53.9 (−65.2 at 66k);
γ 0.95 and 128-unit layers: −53.6; γ 0.95 and 16 minibatches, 112k: −55.0. Every setting
levels off near −54, below a hand-written "go to the nearest landmark" policy (−46), so more
env steps of the same do not help here. Also tried (8 envs, 60k): lr 2e-3 −55.0,
one-episode rollouts −58.6, no value clipping −58.7, LayerNorm −64.3, 8 minibatches × 15
epochs −70 at 42k. Five seeds of both entries: docs/multi_agent.md (benchmarks/marl.py).
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
        max_env_step=160_000,
        env=dict(id=ENV_ID, n_envs=16, eval_n_envs=8,
                 env_kwargs=dict(N=3, max_cycles=25, continuous_actions=continuous)),
        policy=dict(
            collect=dict(n_sample=1600),  # 16 envs × 100 steps: 64 episodes per update
            learn=dict(n_minibatches=4,  # 10 epochs × 4 = 40 gradient steps per update
                       gamma=0.95),  # 25-step episodes: a 20-step horizon learns faster
            eval=dict(evaluator=dict(eval_freq=800, n_episode=32)),  # every 20 updates
        ),
        ckpt=dict(train_freq=4000),  # every 100 updates (160k env steps)
    )
