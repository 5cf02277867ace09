"""The evaluator keeps its own hidden state per env: reset where episodes start, carried
otherwise; a recurrent policy that remembers the cue of rlpipe/RememberFirst-v0 gets it right."""
import functools

import numpy as np
import pytest
from easydict import EasyDict

from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import Task
from rlpipe.envs import EnvManager
from rlpipe.middleware import evaluate_episodes, interaction_evaluator
from tests.envs.env_fakes import CountingEnv, FlakyEnv

from .fakes import CountingPolicy, ForgetfulPolicy


def eval_calls(policy):
    return [c for c in policy.calls if c[0] == "eval"]


def check_calls(calls):
    """As in test_acting_state: the state handed in counts t, `first` is t == 0."""
    assert calls
    for _, obs, state, first, _ in calls:
        np.testing.assert_array_equal(first, obs[:, 0] == 0)
        np.testing.assert_array_equal(state["count"][:, 0], obs[:, 0])


@pytest.mark.parametrize("make", [functools.partial(CountingEnv, 3),
                                  functools.partial(FlakyEnv, fail_at=5, length=4, only_seed=1)])
def test_evaluate_episodes_resets_the_state_at_episode_starts_and_restarts(make):
    env = EnvManager(make, n_envs=2, seed=0, mode="sync")
    policy = CountingPolicy(env.observation_space, env.action_space)
    records = evaluate_episodes(policy.eval_mode, env, 6)
    assert len(records) == 6
    check_calls(eval_calls(policy))
    starts = sum(int(first.sum()) for _, _, _, first, _ in eval_calls(policy))
    assert starts >= 6 + env.restarts  # every episode (and a restarted one) began from zeros
    assert env.restarts == (1 if make.func is FlakyEnv else 0)
    # a second evaluation resets the envs: it starts again from zeros
    calls_before = len(policy.calls)
    evaluate_episodes(policy.eval_mode, env, 2)
    assert policy.calls[calls_before][3].all()


def test_memory_solves_remember_first_and_feed_forward_cannot():
    env = EnvManager("rlpipe/RememberFirst-v0", n_envs=4, seed=0, mode="sync")
    recurrent = CountingPolicy(env.observation_space, env.action_space)
    returns = [r["return"] for r in evaluate_episodes(recurrent.eval_mode, env, 40)]
    assert returns == [1.0] * 40
    forgetful = ForgetfulPolicy(env.observation_space, env.action_space)
    returns = [r["return"] for r in evaluate_episodes(forgetful.eval_mode, env, 40)]
    assert 0.2 < np.mean(returns) < 0.8  # the cue is gone by the last step: a coin flip


def test_interaction_evaluator_uses_the_eval_face_with_state():
    env = EnvManager("rlpipe/RememberFirst-v0", n_envs=2, seed=0, mode="sync")
    policy = CountingPolicy(env.observation_space, env.action_space)
    cfg = EasyDict(policy=dict(eval=dict(evaluator=dict(eval_freq=1, n_episode=4))))
    task = Task()
    with task.start(ctx=OnlineRLContext()):
        task.use(interaction_evaluator(cfg, policy.eval_mode, env))
        task.run(max_step=1)
        assert task.ctx.eval_value == 1.0
    assert eval_calls(policy) and not [c for c in policy.calls if c[0] == "collect"]
