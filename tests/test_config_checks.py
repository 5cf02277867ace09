"""Values that cannot work are refused when a config is resolved, one line naming key and range."""
import math

import pytest

from rlpipe.config import ConfigError
from rlpipe.config_checks import RANGES, ConfigRangeError, Range, check_config, rule_for
from rlpipe.policies import (BCPolicy, DQNPolicy, IQLPolicy, PPOPolicy, R2D2Policy, SACPolicy,
                             TD3BCPolicy, TD3Policy)
from rlpipe.pipelines import offpolicy as _offpolicy, onpolicy as _onpolicy

POLICIES = (DQNPolicy, PPOPolicy, SACPolicy, TD3Policy, BCPolicy, IQLPolicy, TD3BCPolicy)


def resolve(policy_cls, user):
    module = _onpolicy if policy_cls is PPOPolicy else _offpolicy
    return module.resolve_config(policy_cls, {"env": {"id": "CartPole-v1"}}, user)


def nested(dotted, value):
    out = value
    for part in reversed(dotted.split(".")):
        out = {part: out}
    return out


@pytest.mark.parametrize("policy_cls", POLICIES)
def test_defaults_pass(policy_cls):
    resolve(policy_cls, {})


BAD = [
    # (policy, key, bad value, words the message must hold)
    (DQNPolicy, "policy.collect.n_sample", 0, "an int >= 1"),
    (DQNPolicy, "env.n_envs", 0, "an int >= 1"),
    (DQNPolicy, "env.eval_n_envs", -1, "an int >= 1"),
    (DQNPolicy, "replay.capacity", 0, "an int >= 1"),
    (DQNPolicy, "replay.min_samples", -5, "an int >= 0"),
    (DQNPolicy, "replay.beta", 1.5, "[0, 1]"),
    (DQNPolicy, "policy.learn.batch_size", 0, "an int >= 1"),
    (DQNPolicy, "policy.learn.update_per_collect", 0, "an int >= 1"),
    (DQNPolicy, "ckpt.train_freq", 0, "an int >= 1"),
    (DQNPolicy, "policy.eval.evaluator.eval_freq", 0, "an int >= 1"),
    (DQNPolicy, "policy.eval.evaluator.n_episode", 0, "an int >= 1"),
    (DQNPolicy, "policy.learn.lr", 0.0, "> 0"),
    (DQNPolicy, "policy.learn.lr", math.nan, "> 0"),
    (DQNPolicy, "policy.learn.lr", math.inf, "> 0"),
    (DQNPolicy, "policy.learn.gamma", 1.01, "[0, 1]"),
    (DQNPolicy, "policy.learn.tau", 0.0, "(0, 1]"),
    (DQNPolicy, "policy.learn.target_update_freq", 0, "an int >= 1"),
    (DQNPolicy, "policy.other.eps.start", 1.2, "[0, 1]"),
    (DQNPolicy, "policy.other.eps.end", -0.1, "[0, 1]"),
    (DQNPolicy, "policy.other.eps.decay", 0, "an int >= 1"),
    (DQNPolicy, "max_env_step", 0, "an int >= 1"),
    (DQNPolicy, "env.max_restarts", -1, "an int >= 0"),
    (DQNPolicy, "env.restart_window", 0, "an int >= 1, or None"),
    (DQNPolicy, "policy.model.hidden", (64, 0), "list of ints >= 1"),
    (PPOPolicy, "policy.learn.epoch_per_collect", 0, "an int >= 1"),
    (PPOPolicy, "policy.learn.gae_lambda", 2.0, "[0, 1]"),
    (PPOPolicy, "policy.learn.clip_ratio", 0.0, "> 0"),
    (PPOPolicy, "policy.learn.entropy_coef", -0.01, ">= 0"),
    (SACPolicy, "policy.learn.actor_lr", -3e-4, "> 0"),
    (SACPolicy, "policy.learn.critic_lr", 0.0, "> 0"),
    (SACPolicy, "policy.learn.alpha_lr", 0.0, "> 0"),
    (SACPolicy, "policy.learn.tau", 1.5, "(0, 1]"),
    (SACPolicy, "policy.learn.init_alpha", 0.0, "> 0"),
    (SACPolicy, "policy.learn.actor_update_freq", 0, "an int >= 1"),
    (TD3Policy, "policy.learn.policy_delay", 0, "an int >= 1"),
    (TD3Policy, "policy.collect.noise_scale", -0.1, ">= 0"),
    (BCPolicy, "policy.learn.lr", 0.0, "> 0"),
    (IQLPolicy, "policy.learn.expectile", 1.0, "(0, 1)"),
    (IQLPolicy, "policy.learn.beta", -1.0, ">= 0"),
    (IQLPolicy, "policy.learn.max_weight", 0.0, "> 0"),
    (IQLPolicy, "policy.learn.value_lr", 0.0, "> 0"),
    (IQLPolicy, "policy.learn.actor_lr_cosine_steps", 0, "an int >= 1, or None"),
    (TD3BCPolicy, "policy.learn.alpha", -2.5, ">= 0"),
    # ranges a policy declares beside its keys
    (R2D2Policy, "policy.learn.seq_len", 0, "an int >= 1"),
    (R2D2Policy, "policy.learn.burn_in", -1, "an int >= 0"),
    (R2D2Policy, "policy.learn.priority_eta", 1.5, "[0, 1]"),
]


@pytest.mark.parametrize("policy_cls, key, value, allowed", BAD,
                         ids=[f"{p.__name__}-{k}={v}" for p, k, v, _ in BAD])
def test_value_out_of_range_is_one_line_naming_key_and_range(policy_cls, key, value, allowed):
    with pytest.raises(ConfigRangeError) as info:
        resolve(policy_cls, nested(key, value))
    err = info.value
    assert isinstance(err, ConfigError) and isinstance(err, ValueError)
    assert err.key == key
    message = str(err)
    assert len(message.splitlines()) == 1
    assert f"{key!r}" in message and allowed in message, message


def test_none_is_refused_where_the_key_must_be_set_and_accepted_where_it_means_off():
    with pytest.raises(ConfigRangeError, match="'policy.collect.n_sample' is None"):
        resolve(DQNPolicy, nested("policy.collect.n_sample", None))
    cfg = resolve(DQNPolicy, {"policy": {"learn": {"grad_clip": None, "tau": None}},
                              "env": {"restart_window": None}, "max_train_iter": None})
    assert cfg.policy.learn.grad_clip is None and cfg.env.restart_window is None


def test_edges_of_closed_ranges_are_allowed():
    cfg = resolve(DQNPolicy, {"policy": {"learn": {"gamma": 1.0, "tau": 1.0},
                                         "other": {"eps": {"start": 1.0, "end": 0.0}}},
                              "env": {"max_restarts": 0}, "replay": {"min_samples": 0}})
    assert cfg.policy.learn.gamma == 1.0 and cfg.env.max_restarts == 0


def test_huge_but_finite_learning_rate_passes():
    # the NaN-loss stop is tested with lr=1e39: a finite rate is the learner's business
    assert resolve(DQNPolicy, nested("policy.learn.lr", 1e39)).policy.learn.lr == 1e39


def test_log_std_bounds_must_be_ordered():
    with pytest.raises(ConfigRangeError, match="log_std_min.*below the maximum"):
        resolve(SACPolicy, {"policy": {"model": {"log_std_min": 2.0, "log_std_max": -5.0}}})


def test_a_new_policys_keys_are_checked_by_their_names():
    cfg = {"policy": {"learn": {"lr": 1e-3, "q_lr": 0.0, "batch_size": 32}}}
    with pytest.raises(ConfigRangeError, match="'policy.learn.q_lr'.*> 0"):
        check_config(cfg)
    assert rule_for("policy.learn.sync_freq") is not None
    assert rule_for("policy.model.encoder_hidden").sizes
    assert rule_for("policy.learn.some_new_switch") is None


def test_every_numeric_default_of_every_policy_has_a_range():
    """A numeric key added to a policy or the run keys without a range fails here: declare one
    beside its default (`key(default, meaning, range)`) or give it a name a shared rule of
    `rlpipe.schema.RULES` covers."""
    unchecked_ok = {"policy.model.dueling", "policy.learn.double_q", "policy.learn.huber",
                    "policy.learn.auto_alpha", "policy.learn.adv_norm",
                    "policy.model.share_encoder", "policy.model.obs_norm", "env.stop_value"}
    for policy_cls in POLICIES:
        cfg = resolve(policy_cls, {})
        keys = policy_cls.declared_keys("policy.")
        stack = [("", cfg)]
        while stack:
            path, node = stack.pop()
            for key, value in node.items():
                full = f"{path}.{key}" if path else key
                if isinstance(value, dict):
                    stack.append((full, value))
                elif (isinstance(value, (int, float)) and not isinstance(value, bool)
                      and full not in unchecked_ok):
                    assert rule_for(full, keys=keys) is not None, f"{policy_cls.__name__}: {full}"


def test_range_words():
    assert Range(low=0, high=1, low_open=True).describe() == "a finite number in (0, 1]"
    assert Range(low=1, integer=True, optional=True).describe() == "an int >= 1, or None"
    assert all(isinstance(p, str) and isinstance(r, Range) for p, r in RANGES)


def test_a_warm_up_larger_than_the_replay_is_refused():
    from rlpipe.zoo import get_entry

    with pytest.raises(ConfigRangeError, match="min_samples.*never starts"):
        get_entry("cartpole-dqn").resolve({}, ["replay.min_samples=20000", "replay.capacity=10000"])


@pytest.mark.parametrize("policy_cls, user, keys", [
    (DQNPolicy, {"replay": {"capacity": 500, "min_samples": 100},
                 "policy": {"learn": {"batch_size": 1000}}},
     ["'replay.capacity' (500)", "'policy.learn.batch_size' (1000)"]),
    (SACPolicy, {"env": {"n_envs": 8}, "policy": {"collect": {"n_sample": 4}}},
     ["'policy.collect.n_sample' (4)", "'env.n_envs' (8)", "collect 8 env steps"]),
    (PPOPolicy, {"env": {"n_envs": 1}, "policy": {"collect": {"n_sample": 128},
                                                  "learn": {"batch_size": 256}}},
     ["'policy.learn.batch_size' (256)", "'policy.collect.n_sample' (128)"]),
])
def test_settings_that_cannot_train_are_refused_naming_the_keys(policy_cls, user, keys):
    with pytest.raises(ConfigRangeError) as info:
        resolve(policy_cls, user)
    message = str(info.value)
    assert "\n" not in message
    for key in keys:
        assert key in message


def test_the_same_settings_within_limits_pass():
    resolve(DQNPolicy, {"replay": {"capacity": 1000, "min_samples": 100},
                        "policy": {"learn": {"batch_size": 1000}}})
    resolve(SACPolicy, {"env": {"n_envs": 8}, "policy": {"collect": {"n_sample": 8}}})
    resolve(PPOPolicy, {"env": {"n_envs": 1}, "policy": {"collect": {"n_sample": 256},
                                                         "learn": {"batch_size": 256}}})


def test_budgets_that_give_no_update_warn_in_one_line():
    from rlpipe.config_checks import budget_warnings

    before_warm_up = resolve(SACPolicy, {"max_env_step": 500, "replay": {"min_samples": 1000}})
    (line,) = budget_warnings(before_warm_up)
    assert "max_env_step=500" in line and "replay.min_samples=1000" in line
    no_update = resolve(SACPolicy, {"max_env_step": 2000, "env": {"n_envs": 1},
                                    "replay": {"min_samples": 1000},
                                    "policy": {"collect": {"n_sample": 2000},
                                               "learn": {"update_per_collect": 1}}})
    (line,) = budget_warnings(no_update)
    assert "no update in the whole budget" in line and "update_per_collect" in line
    assert budget_warnings(resolve(SACPolicy, {"max_env_step": 5000})) == []
    assert budget_warnings(resolve(PPOPolicy, {})) == []  # on-policy: no warm-up


def test_a_warned_budget_is_said_before_the_run(tmp_path, caplog):
    from rlpipe.cli import main

    with caplog.at_level("WARNING", logger="rlpipe"):
        assert main(["train", "--algo", "sac", "--env", "Pendulum-v1", "--max-env-steps", "50",
                     "--run-dir", str(tmp_path / "run"), "--no-progress"]) == 0
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("max_env_step=50 ends before learning starts" in m for m in warned), warned


def test_a_distributed_run_names_a_launcher_that_exists(monkeypatch):
    from rlpipe.zoo.registry import get_entry

    with pytest.raises(ConfigRangeError, match=r"'parallel.backend' is 'ssh': .*'ray' .*'local'"):
        get_entry("cartpole-dqn").resolve({}, ["parallel.backend=ssh"])
    local = get_entry("cartpole-dqn").resolve(
        {"parallel": {"collectors": 2, "backend": "local", "evaluator": False}})
    assert local.parallel.collectors == 2

    import importlib.util
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "ray" else real_find_spec(name, *a))
    with pytest.raises(ImportError, match="needs Ray, which is not installed"):
        get_entry("cartpole-dqn").resolve(
            {"parallel": {"collectors": 2, "backend": "ray", "evaluator": False}})
    get_entry("cartpole-dqn").resolve({})  # no collectors: no Ray needed
