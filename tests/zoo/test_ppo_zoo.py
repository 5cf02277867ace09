"""The PPO zoo entries: config resolution, short runs through the CLI, and the learning check."""
import importlib.util
import json

import pytest
import torch

from rlpipe.cli import main
from rlpipe.config import ConfigError
from rlpipe.middleware import load_checkpoint
from rlpipe.policies import PPOPolicy
from rlpipe.zoo import MissingDependencyError, get_entry, list_entries
from rlpipe.training import resume, train
from rlpipe.tools.evaluate import evaluate_run

PPO_ENTRIES = ["cartpole-ppo", "pendulum-ppo", "lunarlander-ppo"]


def test_entries_are_listed():
    assert set(PPO_ENTRIES) <= set(list_entries())


@pytest.mark.parametrize("name", PPO_ENTRIES)
def test_entry_resolves_with_the_on_policy_defaults(name):
    entry = get_entry(name)
    assert entry.policy_cls is PPOPolicy
    cfg = entry.resolve({"max_env_step": 5000})
    assert "replay" not in cfg  # the on-policy run config has no replay section
    assert cfg.policy.collect.random_collect_size == 0
    if cfg.policy.learn.lr_schedule == "linear":  # decays over the run unless set
        assert cfg.policy.learn.lr_decay_env_steps == 5000
    with pytest.raises(ConfigError, match="replay"):
        entry.resolve({"replay": {"capacity": 10}})


def test_cli_train_then_eval(tmp_path, capsys):
    run_dir = tmp_path / "run"
    code = main(["train", "cartpole-ppo", "--max-env-steps", "2000", "--run-dir", str(run_dir),
                 "--no-progress", "--set", "policy.eval.evaluator.n_episode=2"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert 2000 <= summary["env_step"] < 2000 + 256 and summary["train_iter"] > 0
    for name in ("config.json", "metrics.jsonl", "log.txt", "ckpt/final.pt", "ckpt/latest.json"):
        assert (run_dir / name).exists(), name
    assert main(["eval", str(run_dir), "--episodes", "2"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["entry"] == "cartpole-ppo" and 8 <= result["mean_return"] <= 500


def test_pendulum_runs_with_box_actions(tmp_path):
    result = train("pendulum-ppo", seed=0, max_env_step=800, run_dir=str(tmp_path),
                   progress=False,
                   overrides=["policy.collect.n_sample=400", "policy.learn.epoch_per_collect=2",
                              "policy.eval.evaluator.n_episode=2",
                              "policy.learn.batch_size=200"])
    assert result["env_step"] == 800 and result["train_iter"] == 2 * 2 * 2
    assert -2000 < result["eval_value"] < 0  # Pendulum's returns are negative


@pytest.mark.skipif(importlib.util.find_spec("Box2D") is None, reason="needs the [box2d] extra")
def test_lunarlander_runs(tmp_path):
    result = train("lunarlander-ppo", seed=0, max_env_step=256, run_dir=str(tmp_path),
                   progress=False,
                   overrides=["policy.collect.n_sample=256", "policy.learn.epoch_per_collect=1",
                              "policy.eval.evaluator.n_episode=1", "env.n_envs=2",
                              "env.eval_n_envs=1"])
    assert result["env_step"] == 256 and result["train_iter"] == 4


def test_lunarlander_names_its_extra(monkeypatch):
    entry = get_entry("lunarlander-ppo")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "Box2D" else real(name, *a))
    with pytest.raises(MissingDependencyError, match=r'pip install "rlpipe\[box2d\]"'):
        entry.check_requirements()


@pytest.mark.slow
def test_cartpole_ppo_learns_within_100k_steps(tmp_path):
    result = train("cartpole-ppo", seed=0, max_env_step=100_000, run_dir=str(tmp_path),
                   progress=False)
    assert result["env_step"] <= 100_000 + 256
    assert result["best_eval_value"] >= 300, {k: v for k, v in result.items() if k != "profile"}
    measured = evaluate_run(str(tmp_path), episodes=10, seed=2024)
    assert measured["mean_return"] >= 0.6 * result["best_eval_value"], measured


def test_stopped_and_resumed_run_ends_with_identical_weights(tmp_path):
    small = ["policy.learn.lr_decay_env_steps=2048", "policy.learn.epoch_per_collect=2",
             "policy.eval.evaluator.n_episode=2", "env.stop_value=None", "ckpt.train_freq=40"]
    whole, split = str(tmp_path / "whole"), str(tmp_path / "split")
    a = train("cartpole-ppo", seed=3, max_env_step=2048, run_dir=whole, progress=False,
              overrides=small)
    first = train("cartpole-ppo", seed=3, max_env_step=1024, run_dir=split, progress=False,
                  overrides=small)
    assert first["env_step"] == 1024
    b = resume(split, max_env_step=2048, progress=False)
    assert (a["env_step"], a["train_iter"]) == (b["env_step"], b["train_iter"]) == (2048, 16)
    wa = load_checkpoint(whole, which="final")["policy"]
    wb = load_checkpoint(split, which="final")["policy"]
    for key in ("model", "acting"):
        for name, tensor in wa[key].items():
            assert torch.equal(tensor, wb[key][name]), f"{key}.{name} differs"
    assert wa["learned_env_steps"] == wb["learned_env_steps"] == 2048
