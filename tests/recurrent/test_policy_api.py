"""The recurrent side of the policy interface: `recurrent`, `initial_state`, loud errors."""
import gymnasium as gym
import numpy as np
import pytest

from rlpipe.contexts import OnlineRLContext
from rlpipe.envs import EnvManager
from rlpipe.middleware import StepCollector, evaluate_episodes
from rlpipe.policies import DQNPolicy, Policy

from .fakes import CountingPolicy

BOX, DISCRETE = gym.spaces.Box(-1, 1, (2,), np.float32), gym.spaces.Discrete(2)


def test_recurrent_policy_and_its_faces_give_the_initial_state():
    policy = CountingPolicy(BOX, DISCRETE)
    for owner in (policy, policy.collect_mode, policy.eval_mode):
        assert owner.recurrent
        state = owner.initial_state(3)
        assert state["count"].shape == (3, 1)
        assert state["memory"]["first_obs"].shape == (3, 2)


def test_feed_forward_policies_are_not_recurrent_and_have_no_state():
    policy = DQNPolicy({}, BOX, DISCRETE)
    assert not DQNPolicy.recurrent and not policy.collect_mode.recurrent
    for owner in (policy, policy.collect_mode, policy.eval_mode):
        with pytest.raises(TypeError, match="DQNPolicy is feed-forward"):
            owner.initial_state(2)


def test_a_recurrent_policy_without_initial_state_is_refused_at_class_creation():
    with pytest.raises(TypeError, match="NoState sets recurrent = True.*initial_state"):
        class NoState(CountingPolicy):
            initial_state = Policy.initial_state


def test_a_recurrent_policy_must_return_its_state_in_the_layout_of_initial_state():
    class Stateless(CountingPolicy):
        def _forward_collect(self, obs, state=None, first=None, **kwargs):
            return {"action": np.zeros(len(obs), np.int64)}

        def _forward_eval(self, obs, state=None, first=None, **kwargs):
            return {"action": np.zeros(len(obs), np.int64), "state": {"h": np.zeros(1)}}

    class BadInitial(CountingPolicy):
        def initial_state(self, n):
            return {"h": np.zeros((n + 1, 4))}

    env = EnvManager("rlpipe/RememberFirst-v0", n_envs=2, seed=0, mode="sync")
    cfg = {"policy": {"collect": {"n_sample": 2}}}
    collector = StepCollector(cfg, Stateless(env.observation_space, env.action_space).collect_mode,
                              env)
    with pytest.raises(KeyError, match="Stateless is recurrent but its forward.. returned no"):
        next(collector(OnlineRLContext()))
    with pytest.raises(ValueError, match=r"Stateless.forward\(\)\['state'\]\['h'\].*leading axis"):
        evaluate_episodes(Stateless(env.observation_space, env.action_space).eval_mode, env, 2)
    with pytest.raises(ValueError, match=r"BadInitial.initial_state\(2\)\['h'\].*leading axis"):
        StepCollector(cfg, BadInitial(env.observation_space, env.action_space).collect_mode, env)
