"""The config schema: a key's default, range and meaning declared once, and what is derived from it
(plain defaults, meanings, range checks), for declared policies and for plain user policies."""
import pytest
from easydict import EasyDict

from rlpipe.config_checks import ConfigRangeError, check_config, rule_for
from rlpipe.pipelines import offpolicy
from rlpipe.policies import DQNPolicy, PPOLSTMPolicy, PPOPolicy, RandomPolicy
from rlpipe.policies.base import Policy
from rlpipe.schema import (PIPELINE_KEYS, RUN_KEYS, Key, count, defaults, extend, flatten, key,
                           positive)


def test_defaults_are_plain_fresh_copies_of_the_declared_values():
    tree = dict(a=key(1, "one", count(1)), s=dict(b=key({}, "an open mapping"), c=(64, 64)))
    first, second = defaults(tree), defaults(tree)
    assert isinstance(first, EasyDict)
    assert first == {"a": 1, "s": {"b": {}, "c": (64, 64)}}
    first.s.b["x"] = 1
    assert second.s.b == {} and tree["s"]["b"].default == {}


def test_flatten_names_every_key_and_takes_plain_values_as_keys_without_meaning_or_range():
    keys = flatten(dict(a=key(1, "one", count(1)), s=dict(b=2, c=key({}, "opaque"))), "p.")
    assert set(keys) == {"p.a", "p.s.b", "p.s.c"}
    assert keys["p.s.b"] == Key(2) and keys["p.s.b"].meaning == "" and keys["p.s.b"].range is None
    assert keys["p.a"].range == count(1) and keys["p.s.c"].default == {}


def test_a_replaced_key_keeps_its_parents_meaning_and_range_unless_it_states_its_own():
    base = dict(learn=dict(lr=key(1e-3, "learning rate", positive("lr")), n=key(1, "n")))
    child = extend(base, dict(learn=dict(lr=3e-4, n=key(2, "own words"), new=key(0, "added"))))
    keys = flatten(child)
    assert keys["learn.lr"] == Key(3e-4, "learning rate", positive("lr"))
    assert keys["learn.n"].meaning == "own words" and keys["learn.new"].default == 0
    assert flatten(base)["learn.lr"].default == 1e-3  # the parent's tree is not changed


def test_a_policys_defaults_are_derived_from_its_declared_keys():
    declared = flatten(DQNPolicy.config_keys())
    assert defaults(DQNPolicy.config_keys()) == DQNPolicy.default_config()
    assert declared["learn.lr"].default == DQNPolicy.default_config().learn.lr
    keys = DQNPolicy.declared_keys("policy.")
    schema = DQNPolicy.config_schema()
    assert keys["policy.collect.n_sample"].default == schema.collect.n_sample
    # a policy that changes a pipeline default keeps the pipeline key's meaning and range
    ppo = PPOPolicy.declared_keys()
    pipeline = flatten(PIPELINE_KEYS)
    for name in ppo.keys() & pipeline.keys():
        assert ppo[name].meaning and ppo[name].range == pipeline[name].range, name


def test_every_declared_run_and_pipeline_range_is_what_check_config_applies():
    for name, declared in {**RUN_KEYS, **flatten(PIPELINE_KEYS, "policy.")}.items():
        if declared.range is not None:
            assert rule_for(name) == declared.range, name


def test_a_range_a_policy_declares_is_checked_when_its_keys_are_given():
    class Chunked(PPOLSTMPolicy):
        @classmethod
        def config_keys(cls):
            return extend(super().config_keys(), dict(
                learn=dict(chunk_len=key(32, "steps per sequence", count(4, "BPTT length")))))

    keys = Chunked.declared_keys("policy.")
    cfg = {"policy": {"learn": {"chunk_len": 2}}}
    assert rule_for("policy.learn.chunk_len") is None
    check_config(cfg)  # no schema given: the shared rules only, which do not cover it
    with pytest.raises(ConfigRangeError, match=r"'policy.learn.chunk_len' is 2.*an int >= 4"):
        check_config(cfg, keys=keys)
    assert keys["policy.learn.chunk_len"].meaning == "steps per sequence"


def test_a_user_policy_with_a_plain_default_config_keeps_working():
    class Plain(RandomPolicy):
        config_meanings = {"learn.step": "my own words"}

        @classmethod
        def default_config(cls):
            return EasyDict(seed=None, learn=dict(step=0.5, lr=0.0))

    keys = Plain.declared_keys("policy.")
    assert keys["policy.learn.step"] == Key(0.5, "my own words")
    assert keys["policy.learn.lr"] == Key(0.0)  # a plain value: no meaning, no range of its own
    assert Plain.config_schema().learn.step == 0.5 and Plain.config_schema().collect.n_sample
    with pytest.raises(ConfigRangeError, match="'policy.learn.lr'"):  # the shared *lr rule
        offpolicy.resolve_config(Plain, {"env": {"id": "CartPole-v1"}})


def test_a_policy_that_declares_no_settings_is_told_how():
    class Nothing(Policy):
        pass

    with pytest.raises(TypeError, match="neither config_keys.*nor default_config"):
        Nothing.default_config()
