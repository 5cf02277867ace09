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
    entry = get_entry(name)
    cfg = entry.resolve()
    budget = cfg.max_train_iter if entry.pipeline == "offline" else cfg.max_env_step
    learn = cfg.policy.learn
    batch = learn.get("batch_size", learn.get("n_minibatches"))  # MAPPO: minibatches per pass
    assert cfg.env.id and batch > 0 and budget > 0


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


GENERIC = ["dqn@CartPole-v1", "ppo@Acrobot-v1", "sac@Pendulum-v1", "td3@Pendulum-v1"]


@pytest.mark.parametrize("name", list_entries() + GENERIC)
def test_every_config_key_has_a_meaning(name):
    from rlpipe.zoo.generic import is_generic
    from rlpipe.zoo._meanings import config_meanings, leaf_keys

    entry = get_entry(name)
    meanings = config_meanings(entry.policy_cls, with_imports=is_generic(name))
    missing = [k for k in leaf_keys(entry.resolve()) if not meanings.get(k)]
    assert not missing, f"{name}: keys without a meaning (add one in zoo/_meanings.py or a " \
                        f"comment beside the default): {missing}"


def test_every_run_defaults_key_has_a_meaning_and_no_meaning_is_stale():
    from rlpipe.pipelines import offline as _offline, offpolicy as _offpolicy, onpolicy as _onpolicy
    from rlpipe.zoo._meanings import RUN_MEANINGS, leaf_keys

    keys = set().union(*(leaf_keys(m.RUN_DEFAULTS) for m in (_offpolicy, _onpolicy, _offline)))
    assert keys - set(RUN_MEANINGS) == set()
    assert set(RUN_MEANINGS) - keys == {"imports"}


def test_a_pipelines_run_defaults_are_the_one_table_less_what_it_lacks():
    from rlpipe.pipelines import offline as _offline, offpolicy as _offpolicy, onpolicy as _onpolicy
    from rlpipe.zoo._meanings import leaf_keys
    from rlpipe.pipelines.run_keys import RUN_KEYS, run_defaults

    for module in (_offpolicy, _onpolicy, _offline):
        for key in leaf_keys(module.RUN_DEFAULTS):
            assert key in RUN_KEYS, f"{module.__name__}: {key} is not in RUN_KEYS"
    offline = run_defaults(without=("replay", "env.n_envs"), changed={"max_train_iter": 7})
    assert "replay" not in offline and "n_envs" not in offline["env"]
    assert offline["max_train_iter"] == 7 and offline["env"]["eval_n_envs"] == RUN_KEYS["env.eval_n_envs"][0]
    first, second = run_defaults(), run_defaults()
    first["env"]["env_kwargs"]["x"] = 1  # each call hands out its own dicts
    assert second["env"]["env_kwargs"] == {}
    with pytest.raises(KeyError, match="'replay.capacty'.*RUN_KEYS"):
        run_defaults(without=("replay.capacty",))
    with pytest.raises(KeyError, match="'replay.alpha'.*left out"):
        run_defaults(without=("replay",), changed={"replay.alpha": 0.5})


def test_meanings_come_from_the_comments_beside_the_defaults():
    from rlpipe.policies import DQNPolicy
    from rlpipe.zoo._meanings import comment_meanings

    meanings = comment_meanings(DQNPolicy)
    assert meanings["learn.lr"] == "Adam learning rate"
    assert meanings["model.dueling"].startswith("dueling head")


def test_a_policy_can_state_meanings_itself():
    from rlpipe.policies import PPOPolicy
    from rlpipe.zoo._meanings import config_meanings

    class Mine(PPOPolicy):
        config_meanings = {"learn.lr": "my own words"}

    assert config_meanings(Mine)["policy.learn.lr"] == "my own words"
