"""Learning check: MAPPO (and IPPO) on a small cooperative game — two agents must pick the same
action (the best match pays 1, the others 0.25), agent 1 dies at step 3 of 4 — reach
near-optimal team returns within a few seconds."""

import numpy as np
import pytest

from rlpipe.middleware.onpolicy import rollout_to_batch
from rlpipe.policies import IPPOPolicy, MAPPOPolicy

from .fakes import FakeMultiAgentEnvManager, collect


def _greedy_team_return(policy, n_envs=8):
    env = FakeMultiAgentEnvManager(n_envs=n_envs, death_step=3)
    obs, returns = env.reset(), []
    while len(returns) < n_envs:
        act = policy.eval_mode.forward(obs, agent_mask=env.agent_mask,
                                       global_state=env.global_state)["action"]
        result = env.step(act)
        returns += [ep["return"] for ep in result.episodes]
        obs = result.obs
    return float(np.mean(returns))


@pytest.mark.slow
@pytest.mark.parametrize("cls,state", [(MAPPOPolicy, True), (MAPPOPolicy, False),
                                       (IPPOPolicy, True)])
def test_reaches_near_optimal_team_return(cls, state):
    env = FakeMultiAgentEnvManager(n_envs=8, death_step=3, state=state)
    # team return of the best joint policy: both pick action 0 while both live, then agent 0 alone
    best = 3 * 2 * env.payoff.max() + 1 * 1.0
    policy = cls({"seed": 0}, env.observation_space, env.action_space, n_agents=2,
                 state_space=env.state_space)
    before = _greedy_team_return(policy)
    obs, sampled = None, 0.0
    for _ in range(60):
        policy.collect_mode.refresh()
        steps, obs = collect(policy.collect_mode, env, 16, obs)
        # the sampling policy's mean reward per present agent and step (optimal: payoff.max())
        sampled = np.mean([s["reward"][s["agent_mask"]].mean() for s in steps])
        if sampled >= 0.95 * env.payoff.max():
            break
        policy.learn_mode.forward(rollout_to_batch(steps, 0.99, 0.95, policy.collect_mode.value))
    after = _greedy_team_return(policy)
    assert sampled >= 0.95 * env.payoff.max(), sampled
    assert after >= 0.95 * best > before, (before, after, best)
