import importlib.util

import pytest

from rlpipe.config import ConfigError
from rlpipe.zoo import ENTRIES, MissingDependencyError, get_entry, list_entries


def test_list_has_the_dqn_entries():
    assert {"cartpole-dqn", "acrobot-dqn", "lunarlander-dqn", "pong-dqn"} <= set(list_entries())


def test_unknown_entry_names_close_matches():
    with pytest.raises(KeyError, match="cartpole-dqn"):
        get_entry("cartpol-dqn")


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_every_entry_config_resolves(name):
    cfg = get_entry(name).resolve()
    assert cfg.env.id and cfg.policy.learn.batch_size > 0 and cfg.max_env_step > 0


def test_overrides_are_parsed_as_literals_and_checked():
    entry = get_entry("cartpole-dqn")
    cfg = entry.resolve(overrides=["policy.learn.lr=3e-4", "policy.model.hidden=(64, 64)"])
    assert cfg.policy.learn.lr == 3e-4 and tuple(cfg.policy.model.hidden) == (64, 64)
    with pytest.raises(ConfigError, match="policy.learn.lr"):
        entry.resolve(overrides=["policy.learn.lrr=1"])
    with pytest.raises(ConfigError, match="policy.learn.batch_size"):
        entry.resolve(overrides=["policy.learn.batch_size='big'"])


def test_missing_optional_dependency_names_the_pip_command(monkeypatch):
    entry = get_entry("lunarlander-dqn")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "Box2D" else real(name, *a))
    with pytest.raises(MissingDependencyError, match=r'pip install "rlpipe\[box2d\]"'):
        entry.check_requirements()
