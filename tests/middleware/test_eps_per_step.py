"""ε once per iteration (default) or at every env step (`policy.other.eps.per_env_step`, SB3's
semantics): the collectors and the inferencer evaluate the one schedule at each action's step."""
import pickle

import gymnasium as gym
import numpy as np
import pytest

from rlpipe.contexts import OnlineRLContext
from rlpipe.middleware import (EpisodeCollector, PerEnvStep, StepCollector, eps_greedy_handler,
                               epsilon_schedule, inferencer, kwargs_at, rolloutor)
from rlpipe.policies import get_policy

from .fakes import FakeCollectPolicy, FakeEnvManager
from .test_collect_learn import cfg, run_generator

EPS = dict(type="linear", start=1.0, end=0.1, decay=100)


def _eps_cfg(per_env_step, **collect):
    return cfg(other=dict(eps=dict(EPS, per_env_step=per_env_step)),
               collect=dict(dict(n_sample=8, random_collect_size=0, n_episode=3), **collect))


def _iteration(per_env_step, start_step):
    """One iteration (handler, then a StepCollector) of 2 envs × 4 steps from `start_step`:
    the eps the policy got at each vector step."""
    c = _eps_cfg(per_env_step)
    policy = FakeCollectPolicy()
    ctx = OnlineRLContext()
    ctx.env_step = start_step
    eps_greedy_handler(c)(ctx)
    run_generator(StepCollector(c, policy, FakeEnvManager(n_envs=2, length=50)), ctx)
    assert ctx.env_step == start_step + 8
    return [kw["eps"] for kw in policy.kwargs]


def test_eps_follows_the_env_step_schedule_within_an_iteration():
    schedule = epsilon_schedule("linear", 1.0, 0.1, 100)
    per_step = _iteration(True, 20)
    assert per_step == pytest.approx([schedule(s) for s in (20, 22, 24, 26)])
    assert len(set(per_step)) == 4  # it moves within the iteration
    # the default keeps one number per iteration: eps at the iteration's first env step
    assert _iteration(False, 20) == pytest.approx([schedule(20)] * 4)
    # past the decay both give the final eps
    assert _iteration(True, 500) == pytest.approx([0.1] * 4)


def test_inferencer_and_episode_collector_evaluate_per_step_eps_too():
    schedule = epsilon_schedule("linear", 1.0, 0.1, 100)
    c = _eps_cfg(True)
    env, policy = FakeEnvManager(n_envs=2, length=50), FakeCollectPolicy()
    infer, roll = inferencer(0, policy, env), rolloutor(policy, env)
    ctx = OnlineRLContext()
    ctx.env_step = 40
    eps_greedy_handler(c)(ctx)
    for _ in range(3):
        infer(ctx)
        roll(ctx)
    assert [kw["eps"] for kw in policy.kwargs] == pytest.approx(
        [schedule(s) for s in (40, 42, 44)])

    env, policy = FakeEnvManager(n_envs=1, length=2), FakeCollectPolicy()
    ctx = OnlineRLContext()
    eps_greedy_handler(c)(ctx)
    EpisodeCollector(c, policy, env)(ctx)  # 3 episodes of 2 steps, one env
    assert [kw["eps"] for kw in policy.kwargs] == pytest.approx(
        [schedule(s) for s in range(6)])


def test_per_env_step_eps_is_one_schedule_that_pickles_and_names_misuse():
    c = _eps_cfg(True)
    ctx = OnlineRLContext()
    eps_greedy_handler(c)(ctx)
    value = ctx.collect_kwargs["eps"]
    assert isinstance(value, PerEnvStep)
    assert pickle.loads(pickle.dumps(value))(50) == pytest.approx(0.55)
    assert kwargs_at({"eps": value, "x": 3}, 50) == {"eps": pytest.approx(0.55), "x": 3}
    plain = {"eps": 0.3}
    assert kwargs_at(plain, 50) is plain
    with pytest.raises(TypeError, match="per_env_step must be True or False"):
        eps_greedy_handler(_eps_cfg("yes"))


def test_dqn_takes_the_setting_and_rejects_an_unevaluated_per_step_eps():
    obs_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    dqn = get_policy("dqn")(dict(seed=0, other=dict(eps=dict(EPS, per_env_step=True))),
                            obs_space, gym.spaces.Discrete(2))
    assert dqn.cfg.other.eps.per_env_step is True
    obs = np.zeros((3, 4), np.float32)
    assert dqn.collect_mode.forward(obs, eps=1.0)["action"].shape == (3,)
    per_step = PerEnvStep(epsilon_schedule("linear", 1.0, 0.1, 100))
    with pytest.raises(TypeError, match=r"per-env-step value.*per_env_step=False"):
        dqn.collect_mode.forward(obs, eps=per_step)
