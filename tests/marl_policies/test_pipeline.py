"""MAPPO/IPPO through the real on-policy pipeline (MultiAgentEnvManager → StepCollector →
gae_estimator → multistep_trainer) on a PettingZoo parallel env with a dying agent and masks."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from easydict import EasyDict

pytest.importorskip("pettingzoo")

from rlpipe.contexts import MultiAgentRLContext  # noqa: E402
from rlpipe.engine import Task  # noqa: E402
from rlpipe.envs import MultiAgentEnvManager  # noqa: E402
from rlpipe.middleware import StepCollector, gae_estimator, multistep_trainer  # noqa: E402
from rlpipe.policies import IPPOPolicy, MAPPOPolicy  # noqa: E402
from tests.marl.fake_env import make  # noqa: E402


def _env():
    # 3 agents, Discrete(3); agent k earns action + 10k and may not take action k; a1 leaves
    # after 2 of 6 steps; a global state
    return MultiAgentEnvManager(functools.partial(make, masks="obs", length=6), n_envs=4, seed=0)


def _train(cls, iterations, **policy_cfg):
    env = _env()
    cfg = EasyDict({"policy": {"collect": {"n_sample": 64},
                               "learn": {"gamma": 0.9, "gae_lambda": 0.95}}})
    policy = cls({"seed": 0, **policy_cfg}, env.observation_space, env.action_space,
                 n_agents=env.n_agents, state_space=env.state_space)
    with Task().start(ctx=MultiAgentRLContext(agents=env.agents)) as task:
        task.use(StepCollector(cfg, policy.collect_mode, env))
        task.use(gae_estimator(cfg, policy.collect_mode))
        task.use(multistep_trainer(cfg, policy.learn_mode))
        task.run(max_step=iterations)
        ctx = task.ctx
    return env, policy, ctx


@pytest.mark.parametrize("cls", [MAPPOPolicy, IPPOPolicy])
def test_runs_through_the_pipeline_with_a_dying_agent_and_masks(cls):
    _, policy, ctx = _train(cls, 2, learn={"epoch_per_collect": 2})
    assert ctx.train_iter == 4 and np.isfinite(ctx.train_output["value_loss"])
    assert policy.critic_input == ("state" if cls is MAPPOPolicy else "local")


@pytest.mark.slow
def test_mappo_learns_the_best_valid_actions_through_the_pipeline():
    _, policy, _ = _train(MAPPOPolicy, 25)
    env = _env()  # the run closed its own
    obs = env.reset()
    act = policy.eval_mode.forward(obs, agent_mask=env.agent_mask, global_state=env.global_state,
                                   action_mask=env.action_mask)["action"]
    # the best action each agent may take: 2, except agent 2 (action 2 is masked for it): 1
    np.testing.assert_array_equal(act, np.tile([2, 2, 1], (env.n_envs, 1)))
    env.close()


@pytest.mark.slow
def test_zoo_on_policy_pipeline_trains_mappo_on_simple_spread():
    pytest.importorskip("mpe2")
    from rlpipe.pipelines.onpolicy import resolve_config, run_onpolicy
    cfg = resolve_config(MAPPOPolicy, {
        "env": {"id": "mpe2/simple_spread_v3", "n_envs": 4, "eval_n_envs": 2},
        "max_env_step": 800, "progress": False,
        "policy": {"collect": {"n_sample": 400},
                   "eval": {"evaluator": {"eval_freq": 1000, "n_episode": 2}}}})
    out = run_onpolicy(cfg, MAPPOPolicy)
    assert out["env_step"] == 800 and out["train_iter"] == 20 and np.isfinite(out["eval_value"])
