"""The Policy base, the registry, RandomPolicy and the package's public names."""
import gymnasium as gym
import numpy as np
import pytest
import torch
from easydict import EasyDict

import rlpipe.policies as policies
from rlpipe.policies import (DQNPolicy, Policy, RandomPolicy, UnknownPolicyError,
                             UnsupportedSpaceError, get_policy, policy_names, register_policy)

VEC = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)


def test_all_lists_public_names():
    assert sorted(policies.__all__) == [
        "BCPolicy", "CQLPolicy", "CollectMode", "DQNPolicy", "DiscreteCQLPolicy", "EvalMode",
        "IPPOPolicy", "IQLPolicy", "LearnMode", "MAPPOPolicy", "ObservationShapeError",
        "PPOLSTMPolicy", "PPOPolicy", "Policy", "R2D2Policy", "RandomPolicy",
        "SACPolicy", "TD3BCPolicy", "TD3Policy", "UnknownPolicyError", "UnsupportedSpaceError",
        "describe_space", "get_policy", "policy_names", "register_policy"]
    for name in policies.__all__:
        assert hasattr(policies, name)


def test_registry_lookup_and_errors():
    assert get_policy("dqn") is DQNPolicy and get_policy("DQN") is DQNPolicy
    assert get_policy("random") is RandomPolicy
    assert {"dqn", "random"} <= set(policy_names())
    with pytest.raises(UnknownPolicyError) as info:
        get_policy("dqm")
    msg = str(info.value)
    assert isinstance(info.value, KeyError)
    assert "'dqm'" in msg and "Did you mean 'dqn'" in msg
    assert f"Known policies: {', '.join(policy_names())}." in msg
    with pytest.raises(TypeError, match="Policy subclass"):
        register_policy("x", dict)
    with pytest.raises(ValueError, match="already registered"):
        register_policy("dqn", RandomPolicy)


class _Minimal(Policy):
    action_space_types = (gym.spaces.Discrete,)
    space_hint = "Try another one."

    @classmethod
    def default_config(cls):
        return EasyDict(alpha=1.0)

    def _forward_collect(self, obs, **kw):
        return {"action": np.zeros(len(obs), np.int64), "kw": kw}

    def _refresh(self):
        self.refreshed = True

    def _forward_eval(self, obs):
        return {"action": np.ones(len(obs), np.int64)}

    def _forward_learn(self, batch):
        self.train_iter += 1
        return {"loss": 0.0}

    def state_dict(self):
        return {"train_iter": self.train_iter}

    def load_state_dict(self, state):
        self.train_iter = state["train_iter"]


def test_base_builds_faces_and_registers_subclasses():
    p = _Minimal({"alpha": 2}, VEC, gym.spaces.Discrete(3))
    assert p.cfg.alpha == 2.0
    assert p.collect_mode.forward(np.zeros((2, 3)), eps=0.5)["kw"] == {"eps": 0.5}
    p.collect_mode.refresh()
    assert p.refreshed
    assert p.eval_mode.forward(np.zeros((2, 3)))["action"].tolist() == [1, 1]
    p.learn_mode.forward({})
    assert p.learn_mode.train_iter == 1 and "train_iter 1" in repr(p.learn_mode)
    from rlpipe.policies import registry
    register_policy("minimal-test", _Minimal)
    try:
        assert get_policy("Minimal-Test") is _Minimal
    finally:
        del registry._REGISTRY["minimal-test"]
    with pytest.raises(UnsupportedSpaceError, match=r"_Minimal does not support the action space "
                                                   r"Box.*needs Discrete\. Try another one\."):
        _Minimal({}, VEC, VEC)
    with pytest.raises(TypeError):
        Policy({}, VEC, VEC)  # abstract


@pytest.mark.parametrize("space", [gym.spaces.Discrete(3, start=2), gym.spaces.Box(-2.0, 2.0, (2,)),
                                   gym.spaces.MultiDiscrete([2, 5])])
def test_random_policy_samples_valid_actions(space):
    p = RandomPolicy({"seed": 0}, VEC, space)
    actions = p.collect_mode.forward(np.zeros((64, 3)))["action"]
    assert len(actions) == 64 and all(space.contains(a) for a in actions)
    state = p.state_dict()
    first = p.eval_mode.forward(np.zeros((5, 3)))["action"]
    p.load_state_dict(torch.load(_save(state), weights_only=True))
    np.testing.assert_array_equal(p.eval_mode.forward(np.zeros((5, 3)))["action"], first)


def _save(obj):
    import io
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return buf


def test_enable_field_offers_the_named_faces_and_each_face_loads_the_policy_state():
    small = {"model": {"hidden": (16,)}}
    saved = DQNPolicy({**small, "seed": 1}, VEC, gym.spaces.Discrete(3))
    policy = DQNPolicy({**small, "seed": 2}, VEC, gym.spaces.Discrete(3),
                       enable_field=["collect", "eval"])
    obs = np.random.default_rng(0).uniform(-1.0, 1.0, (32, 3)).astype(np.float32)
    saved_greedy = saved.eval_mode.forward(obs)["action"]
    assert not np.array_equal(policy.collect_mode.forward(obs)["action"], saved_greedy)
    # DI-engine's policy.collect_mode.load_state_dict(state): the collector acts with it at once
    policy.collect_mode.load_state_dict(saved.collect_mode.state_dict())
    assert np.array_equal(policy.collect_mode.forward(obs)["action"], saved_greedy)
    assert np.array_equal(policy.eval_mode.forward(obs)["action"], saved_greedy)
    with pytest.raises(AttributeError, match=r"DQNPolicy\(\.\.\., enable_field=\['collect', "
                                             r"'eval'\]\) has no learn_mode: add 'learn'"):
        policy.learn_mode
    assert DQNPolicy(small, VEC, gym.spaces.Discrete(3), enable_field="learn").learn_mode
    for wrong in (["colect"], [], 3):
        with pytest.raises(ValueError, match=r"name one or more of \['learn', 'collect', "
                                             r"'eval'\], as a list"):
            DQNPolicy(small, VEC, gym.spaces.Discrete(3), enable_field=wrong)
