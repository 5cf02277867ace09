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
    from rlpipe.cli.config_view import config_meanings, leaf_keys, value_dicts

    entry = get_entry(name)
    meanings = config_meanings(entry.policy_cls, with_imports=is_generic(name))
    keys = leaf_keys(entry.resolve(), values=value_dicts(entry.policy_cls))
    missing = [k for k in keys if not meanings.get(k)]
    assert not missing, f"{name}: keys without a meaning (declare it beside the default: " \
                        f"key(default, meaning) in rlpipe/schema.py or the policy): {missing}"


def test_every_run_key_has_a_meaning_and_every_run_key_is_taken_by_some_pipeline():
    from rlpipe.cli.config_view import leaf_keys
    from rlpipe.pipelines.run_keys import RUN_DEFAULTS
    from rlpipe.schema import RUN_KEYS

    keys = set().union(*(leaf_keys(defaults) for defaults in RUN_DEFAULTS.values()))
    assert keys == set(RUN_KEYS)
    assert not [name for name, declared in RUN_KEYS.items() if not declared.meaning]


def test_a_pipelines_run_defaults_are_the_one_table_less_what_it_lacks():
    from rlpipe.cli.config_view import leaf_keys
    from rlpipe.pipelines import offline as _offline, offpolicy as _offpolicy, onpolicy as _onpolicy
    from rlpipe.pipelines.run_keys import PIPELINE_RUNS, RUN_DEFAULTS, run_defaults
    from rlpipe.policies import RandomPolicy
    from rlpipe.schema import RUN_KEYS

    for module, pipeline in ((_offpolicy, "off-policy"), (_onpolicy, "on-policy"),
                             (_offline, "offline")):
        without, changed = PIPELINE_RUNS[pipeline]
        run_keys = leaf_keys(RUN_DEFAULTS[pipeline])
        assert set(run_keys) <= set(RUN_KEYS)
        assert not [k for k in run_keys if k in without or k.split(".")[0] in without]
        cfg = module.default_config(RandomPolicy)
        for key in run_keys:  # the pipeline's default config is the table's, with its changes
            node = cfg
            for part in key.split("."):
                node = node[part]
            assert node == changed.get(key, RUN_KEYS[key].default), f"{pipeline}: {key}"
    offline = run_defaults(without=("replay", "env.n_envs"), changed={"max_train_iter": 7})
    assert "replay" not in offline and "n_envs" not in offline["env"]
    assert offline["max_train_iter"] == 7
    assert offline["env"]["eval_n_envs"] == RUN_KEYS["env.eval_n_envs"].default
    first, second = run_defaults(), run_defaults()
    first["env"]["env_kwargs"]["x"] = 1  # each call hands out its own dicts
    assert second["env"]["env_kwargs"] == {}
    with pytest.raises(KeyError, match="'replay.capacty'.*RUN_KEYS"):
        run_defaults(without=("replay.capacty",))
    with pytest.raises(KeyError, match="'replay.alpha'.*left out"):
        run_defaults(without=("replay",), changed={"replay.alpha": 0.5})


def test_meanings_come_from_the_keys_declared_beside_the_defaults():
    from rlpipe.cli.config_view import config_meanings
    from rlpipe.policies import DQNPolicy, PPOLSTMPolicy, PPOPolicy

    meanings = config_meanings(DQNPolicy)
    assert meanings["policy.learn.lr"] == "Adam learning rate"
    assert meanings["policy.model.dueling"].startswith("dueling head")
    assert meanings["policy.collect.n_sample"].startswith("env steps collected")  # pipeline's
    # a subclass that changes a default without a meaning keeps its parent's meaning
    assert PPOLSTMPolicy.default_config().model.activation == "relu"
    assert PPOPolicy.default_config().model.activation != "relu"
    activation = config_meanings(PPOPolicy)["policy.model.activation"]
    assert activation and config_meanings(PPOLSTMPolicy)["policy.model.activation"] == activation


def test_a_policy_can_state_meanings_itself():
    from rlpipe.cli.config_view import config_meanings
    from rlpipe.policies import PPOPolicy

    class Mine(PPOPolicy):
        config_meanings = {"learn.lr": "my own words"}

    assert config_meanings(Mine)["policy.learn.lr"] == "my own words"
