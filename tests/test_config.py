import pickle

import numpy as np
import pytest
import torch.nn as nn
from easydict import EasyDict

from rlpipe.config import (ConfigError, ConfigTypeError, UnknownConfigKeyError, apply_overrides,
                           merge_config, to_plain)
import rlpipe.config as config_module


def defaults():
    return EasyDict(
        device="cpu",
        seed=None,
        model=dict(hidden=(64, 64), dueling=False, activation=nn.ReLU),
        learn=dict(lr=1e-3, batch_size=32, gamma=0.99, grad_clip=None, extra={}),
    )


def test_all_lists_public_names():
    assert sorted(config_module.__all__) == sorted(
        ["ConfigError", "ConfigTypeError", "UnknownConfigKeyError", "apply_overrides",
         "merge_config", "to_plain"])


def test_merge_deep_and_does_not_mutate_inputs():
    d = defaults()
    user = {"learn": {"lr": 3e-4}, "model": {"dueling": True}}
    cfg = merge_config(d, user)
    assert isinstance(cfg, EasyDict) and isinstance(cfg.learn, EasyDict)
    assert cfg.learn.lr == 3e-4 and cfg.learn.batch_size == 32 and cfg.learn.gamma == 0.99
    assert cfg.model.dueling is True and cfg.model.hidden == (64, 64)
    assert d.learn.lr == 1e-3 and d.model.dueling is False
    assert user == {"learn": {"lr": 3e-4}, "model": {"dueling": True}}
    cfg.learn.batch_size = 7
    assert d.learn.batch_size == 32


def test_merge_none_user_gives_defaults_copy():
    cfg = merge_config(defaults(), None)
    assert cfg == defaults()


def test_unknown_key_names_full_path_and_close_matches():
    with pytest.raises(UnknownConfigKeyError) as info:
        merge_config(defaults(), {"learn": {"lrr": 0.1}}, path="policy")
    err = info.value
    assert isinstance(err, KeyError) and isinstance(err, ConfigError)
    msg = str(err)
    assert "'policy.learn.lrr'" in msg and "'policy.learn.lr'" in msg
    assert err.key == "policy.learn.lrr"
    assert err.close_matches == ("policy.learn.lr",)
    assert not msg.startswith('"')  # readable, not KeyError's repr


def test_unknown_top_level_key_without_close_match_lists_known():
    with pytest.raises(UnknownConfigKeyError, match="zzz.*Keys known in the top level: device"):
        merge_config(defaults(), {"zzz": 1})


@pytest.mark.parametrize("key,value,expected", [
    (("learn", "lr"), "0.1", "float"),
    (("learn", "batch_size"), "32", "int"),
    (("learn", "batch_size"), 0.5, "int"),
    (("learn", "batch_size"), True, "int"),
    (("model", "dueling"), 1, "bool"),
    (("model", "hidden"), 64, "list or tuple"),
    (("device",), 0, "str"),
    (("learn",), 3, "mapping"),
    (("model", "activation"), "relu", "class"),
])
def test_wrong_type_names_key_expected_and_given(key, value, expected):
    user = value
    for part in reversed(key):
        user = {part: user}
    with pytest.raises(ConfigTypeError) as info:
        merge_config(defaults(), user)
    msg = str(info.value)
    assert repr(".".join(key)) in msg
    assert expected in msg
    assert type(value).__name__ in msg
    assert isinstance(info.value, TypeError)


def test_conversions():
    cfg = merge_config(defaults(), {"learn": {"lr": 1, "batch_size": 1e2}, "model": {"hidden": [8]}})
    assert cfg.learn.lr == 1.0 and isinstance(cfg.learn.lr, float)
    assert cfg.learn.batch_size == 100 and isinstance(cfg.learn.batch_size, int)
    assert cfg.model.hidden == (8,) and isinstance(cfg.model.hidden, tuple)
    cfg = merge_config(defaults(), {"learn": {"batch_size": np.int64(5), "gamma": np.float32(0.5)}})
    assert type(cfg.learn.batch_size) is int and type(cfg.learn.gamma) is float
    cfg = merge_config(defaults(), {"model": {"activation": nn.Tanh}})
    assert cfg.model.activation is nn.Tanh


def test_none_default_accepts_anything_and_empty_dict_is_open():
    cfg = merge_config(defaults(), {"seed": 3, "learn": {"grad_clip": 10.0, "extra": {"a": {"b": 1}}}})
    assert cfg.seed == 3 and cfg.learn.grad_clip == 10.0 and cfg.learn.extra.a.b == 1
    cfg = merge_config(defaults(), {"seed": {"nested": [1, 2]}})
    assert cfg.seed.nested == [1, 2]
    # None is accepted for any non-section key ("off"), never for a section
    cfg = merge_config(defaults(), {"learn": {"lr": None}, "model": {"hidden": None}})
    assert cfg.learn.lr is None and cfg.model.hidden is None
    with pytest.raises(ConfigTypeError, match="'learn'.*mapping"):
        merge_config(defaults(), {"learn": None})


def test_overrides_parse_literals_and_words():
    cfg = merge_config(defaults(), {})
    out = apply_overrides(cfg, ["learn.lr=3e-4", "model.dueling=True", "model.hidden=(32, 16)",
                                "device=cuda", "seed=None", "learn.grad_clip=0.5",
                                "learn.batch_size=1e3"])
    assert out.learn.lr == 3e-4 and out.model.dueling is True and out.model.hidden == (32, 16)
    assert out.device == "cuda" and out.seed is None and out.learn.grad_clip == 0.5
    assert out.learn.batch_size == 1000
    assert cfg.learn.lr == 1e-3  # input untouched
    # a str key keeps the raw text even when it looks like a literal
    assert apply_overrides(cfg, ["device=1"]).device == "1"
    # below a None value any sub-key is accepted
    assert apply_overrides(cfg, ["seed.a=1"]).seed == {"a": 1}
    assert apply_overrides(cfg, ["learn.extra.env_id=CartPole-v1"]).learn.extra.env_id == "CartPole-v1"


def test_override_errors():
    cfg = merge_config(defaults(), {})
    with pytest.raises(UnknownConfigKeyError, match="'learn.gama'.*'learn.gamma'"):
        apply_overrides(cfg, ["learn.gama=0.9"])
    with pytest.raises(UnknownConfigKeyError, match="'lern'.*'learn'"):
        apply_overrides(cfg, ["lern.gamma=0.9"])
    with pytest.raises(ConfigTypeError, match="'learn.lr'.*float"):
        apply_overrides(cfg, ["learn.lr=fast"])
    with pytest.raises(ConfigError, match="key.path=value"):
        apply_overrides(cfg, ["learn.lr"])
    with pytest.raises(ConfigError, match="empty key"):
        apply_overrides(cfg, ["learn..lr=1"])
    with pytest.raises(ConfigError, match="not a section"):
        apply_overrides(cfg, ["device.x.y=1"])


def test_to_plain_round_trips_through_pickle():
    cfg = merge_config(defaults(), {"seed": {"runs": [{"a": 1}, {"b": 2}]}})
    plain = to_plain(cfg)
    assert type(plain) is dict and type(plain["learn"]) is dict
    assert type(plain["seed"]["runs"][0]) is dict
    assert plain["model"]["hidden"] == (64, 64)
    back = EasyDict(pickle.loads(pickle.dumps(plain)))
    assert back == cfg
    back.seed.runs[0]["a"] = 5
    assert back.seed.runs[0].a == 5  # views agree after rebuilding from plain


def test_allow_unknown_copies_extras_and_still_checks_types():
    cfg = merge_config(defaults(), {"learn": {"lr": 0.5, "update_per_collect": 3}, "other": {"x": 1}},
                       allow_unknown=True)
    assert cfg.learn.update_per_collect == 3 and cfg.other.x == 1 and cfg.learn.lr == 0.5
    with pytest.raises(ConfigTypeError, match="'learn.lr'"):
        merge_config(defaults(), {"learn": {"lr": "x"}}, allow_unknown=True)


def test_override_nan_and_inf_are_floats_for_number_keys_and_text_for_str_keys():
    cfg = apply_overrides(defaults(), ["learn.lr=nan", "learn.gamma=-inf"])
    assert np.isnan(cfg.learn.lr) and cfg.learn.gamma == -np.inf
    assert apply_overrides(defaults(), ["device=inf"]).device == "inf"
