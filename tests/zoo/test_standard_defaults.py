"""Generic runs (`--algo A --env E`) start from the field's standard defaults, in rlpipe's
units, and `rlpipe config` names where each comes from; the tuned zoo entries do not read them."""
import json
import pathlib

import pytest

from rlpipe.cli import main
from rlpipe.standard_defaults import STANDARDS, budget_rules, explicit_keys, standard_config
from rlpipe.zoo import get_entry


def _config_lines(capsys, *argv) -> dict:
    assert main(["config", *argv]) == 0
    lines = {}
    for line in capsys.readouterr().out.splitlines():
        if not line.startswith("#") and " = " in line:
            key, _, rest = line.partition(" = ")
            lines[key.strip()] = rest
    return lines


def _value(line: str):
    return json.loads(line.split("#")[0].strip())


def test_config_names_the_source_of_each_standard_default(capsys):
    lines = _config_lines(capsys, "--algo", "sac", "--env", "Pendulum-v1")
    assert _value(lines["policy.collect.n_sample"]) == 1
    assert _value(lines["policy.learn.update_per_collect"]) == 1  # one update per env step
    assert _value(lines["env.n_envs"]) == 1
    assert "[SB3 SAC: learning_starts=100]" in lines["replay.min_samples"]
    assert _value(lines["replay.min_samples"]) == 100
    assert "[SB3 SAC: learning_rate=3e-4]" in lines["policy.learn.actor_lr"]
    # a key no reference sets carries no source: it is rlpipe's own default
    assert "[" not in lines["ckpt.train_freq"].split("#", 1)[1]


def test_a_set_value_is_marked_as_yours(capsys):
    lines = _config_lines(capsys, "--algo", "sac", "--env", "Pendulum-v1",
                          "--set", "policy.learn.gamma=0.98")
    assert _value(lines["policy.learn.gamma"]) == 0.98
    assert "[your --set]" in lines["policy.learn.gamma"]


@pytest.mark.parametrize("algo, env, updates_per_env_step", [
    ("dqn", "CartPole-v1", 1 / 4),  # SB3: train_freq 4, gradient_steps 1
    ("sac", "Pendulum-v1", 1.0),
    ("td3", "Pendulum-v1", 1.0),
])
def test_off_policy_update_ratio_is_the_reference_one(algo, env, updates_per_env_step):
    cfg = get_entry(f"{algo}@{env}").resolve({})
    assert cfg.env.n_envs == 1
    ratio = cfg.policy.learn.update_per_collect / cfg.policy.collect.n_sample
    assert ratio == pytest.approx(updates_per_env_step)
    assert cfg.replay.min_samples == cfg.policy.collect.random_collect_size == 100


def test_ppo_collects_sb3s_2048_step_rollouts():
    cfg = get_entry("ppo@CartPole-v1").resolve({})
    assert (cfg.env.n_envs, cfg.policy.collect.n_sample) == (1, 2048)
    assert (cfg.policy.learn.batch_size, cfg.policy.learn.epoch_per_collect) == (64, 10)


def test_dqn_exploration_follows_the_budget_unless_set():
    entry = get_entry("dqn@CartPole-v1")
    assert entry.resolve({"max_env_step": 50_000}).policy.other.eps.decay == 5000
    assert entry.resolve({}, ["max_env_step=30000"]).policy.other.eps.decay == 3000
    kept = entry.resolve({"max_env_step": 50_000}, ["policy.other.eps.decay=777"])
    assert kept.policy.other.eps.decay == 777


def test_a_resumed_run_keeps_its_saved_decay():
    """Resume passes the saved config as the user's: its decay is the user's, not recomputed."""
    entry = get_entry("dqn@CartPole-v1")
    saved = {"max_env_step": 10_000, "policy": {"other": {"eps": {"decay": 1000}}}}
    assert entry.resolve({**saved, "max_env_step": 40_000}).policy.other.eps.decay == 1000


def test_zoo_entries_do_not_read_the_standard_table(capsys):
    lines = _config_lines(capsys, "pendulum-sac")
    assert not any("[SB3" in line for line in lines.values())
    entry_cfg = get_entry("pendulum-sac").config
    cfg = get_entry("pendulum-sac").resolve({})
    assert cfg.policy.collect.n_sample == entry_cfg["policy"]["collect"]["n_sample"]


def test_every_standard_key_exists_in_its_algorithms_config():
    """A standard default for a key the config does not have would fail only when used."""
    envs = {"dqn": "CartPole-v1", "ppo": "CartPole-v1", "sac": "Pendulum-v1",
            "td3": "Pendulum-v1", "ppo-lstm": "CartPole-v1", "r2d2": "CartPole-v1"}
    for algo, env in envs.items():
        cfg = get_entry(f"{algo}@{env}").resolve({})
        for row in STANDARDS[algo]:
            section = cfg
            for part in row.key.split("."):
                assert part in section, f"{algo}: {row.key} is not a config key"
                section = section[part]
            if not row.follows_budget:
                expected = list(row.value) if isinstance(row.value, tuple) else row.value
                got = list(section) if isinstance(section, (list, tuple)) else section
                assert got == expected, f"{algo}: {row.key} = {got!r}, standard {expected!r}"


def test_helpers_on_their_own():
    assert standard_config("no-such-algo") == {}
    assert standard_config("sac")["policy"]["learn"]["actor_lr"] == 3e-4
    assert sorted(explicit_keys({"a": {"b": 1}, "c": 2}, ["d.e=3"])) == ["a.b", "c", "d.e"]
    cfg = {"max_env_step": 1000, "policy": {"other": {"eps": {"decay": 1}}}}
    budget_rules("dqn", cfg, explicit=())
    assert cfg["policy"]["other"]["eps"]["decay"] == 100


@pytest.mark.slow
def test_sac_learns_pendulum_at_its_standard_defaults(tmp_path, capsys):
    """SB3's SAC reaches about -150 by 6k env steps on Pendulum at these settings; a loose
    bar at 5k: the best greedy evaluation above -500 (random: about -1200)."""
    run = tmp_path / "run"
    assert main(["train", "--algo", "sac", "--env", "Pendulum-v1", "--max-env-steps", "5000",
                 "--run-dir", str(run), "--no-progress"]) == 0
    returns = [json.loads(line).get("eval/return_mean")
               for line in (run / "metrics.jsonl").read_text().splitlines()]
    best = max(r for r in returns if r is not None)
    assert best > -500, f"best eval {best}"


@pytest.mark.slow
def test_ppo_learns_cartpole_at_its_standard_defaults(tmp_path):
    """SB3's PPO defaults: 2048-step rollouts of one env. 5 rollouts: best eval >= 200."""
    run = tmp_path / "run"
    assert main(["train", "--algo", "ppo", "--env", "CartPole-v1", "--max-env-steps", "10240",
                 "--run-dir", str(run), "--no-progress"]) == 0
    returns = [json.loads(line).get("eval/return_mean")
               for line in (run / "metrics.jsonl").read_text().splitlines()]
    best = max(r for r in returns if r is not None)
    assert best >= 200, f"best eval {best}"
