"""The continuous-control zoo entries (SAC, TD3): configs, short runs through the CLI's code path,
checkpoint + eval, optional dependencies, and a learning check for pendulum-sac."""
import importlib.util
import json
import os

import pytest
import torch

from rlpipe.cli import main
from rlpipe.policies import SACPolicy, TD3Policy
from rlpipe.middleware import load_checkpoint
from rlpipe.zoo import MissingDependencyError, get_entry, list_entries
from rlpipe.training import resume, train
from rlpipe.tools.evaluate import evaluate_run

ENTRIES = {"pendulum-sac": SACPolicy, "pendulum-td3": TD3Policy,
           "lunarlandercontinuous-sac": SACPolicy, "hopper-sac": SACPolicy}
# A few hundred env steps: warm-up, some updates, two short evaluations.
TINY = ["policy.collect.random_collect_size=100", "replay.min_samples=100",
        "policy.learn.batch_size=32", "policy.eval.evaluator.n_episode=1",
        "policy.eval.evaluator.eval_freq=100", "env.eval_n_envs=1"]
HAS_BOX2D = importlib.util.find_spec("Box2D") is not None
HAS_MUJOCO = importlib.util.find_spec("mujoco") is not None


def test_entries_are_listed_and_resolve():
    assert set(ENTRIES) <= set(list_entries())
    for name, policy_cls in ENTRIES.items():
        entry = get_entry(name)
        cfg = entry.resolve()
        assert entry.policy_cls is policy_cls and cfg.env.id and cfg.max_env_step > 0
        assert cfg.policy.learn.update_per_collect == cfg.policy.collect.n_sample  # 1 per step
    assert get_entry("pendulum-sac").resolve().env.stop_value == -200
    assert get_entry("pendulum-td3").resolve().max_env_step == 30_000


def test_continuous_policies_explore_without_an_epsilon_schedule():
    from rlpipe.policies import DQNPolicy

    assert DQNPolicy.explores_with_eps and not SACPolicy.explores_with_eps
    assert not TD3Policy.explores_with_eps


@pytest.mark.parametrize("name", ["pendulum-sac", "pendulum-td3"])
def test_short_run_writes_checkpoints_that_eval_reloads(name, tmp_path, capsys):
    run_dir = tmp_path / "run"
    argv = ["train", name, "--max-env-steps", "300", "--run-dir", str(run_dir), "--no-progress"]
    for item in TINY:
        argv += ["--set", item]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["env_step"] >= 300 and summary["train_iter"] > 0
    assert (run_dir / "ckpt" / "final.pt").exists()
    result = evaluate_run(str(run_dir), episodes=2, seed=5)
    assert result["entry"] == name and -2000 < result["mean_return"] <= 0


@pytest.mark.parametrize("name", ["pendulum-sac", "pendulum-td3"])
def test_stopped_and_resumed_run_ends_with_identical_weights(name, tmp_path):
    # the policy state (weights, targets, optimisers, alpha, RNGs, counters) resumes exactly
    small = TINY + ["env.stop_value=1e9", "policy.model.actor_hidden=(16, 16)",
                    "policy.model.critic_hidden=(16, 16)"]
    whole, split = str(tmp_path / "whole"), str(tmp_path / "split")
    a = train(name, seed=2, max_env_step=384, run_dir=whole, progress=False, overrides=small)
    train(name, seed=2, max_env_step=192, run_dir=split, progress=False, overrides=small)
    b = resume(split, max_env_step=384, progress=False)
    assert (a["env_step"], a["train_iter"]) == (b["env_step"], b["train_iter"])
    wa = load_checkpoint(whole, which="final")["policy"]
    wb = load_checkpoint(split, which="final")["policy"]
    assert wa.keys() == wb.keys()
    for key in ("actor", "critic", "critic_target", "acting"):
        for tensor_name, value in wa[key].items():
            assert torch.equal(value, wb[key][tensor_name]), (key, tensor_name)
    assert wa["train_iter"] == wb["train_iter"] and torch.equal(wa["learn_rng"], wb["learn_rng"])


@pytest.mark.skipif(not HAS_BOX2D, reason="LunarLanderContinuous needs Box2D: "
                    "pip install \"rlpipe[box2d]\"")
def test_lunarlandercontinuous_sac_smoke(tmp_path):
    result = train("lunarlandercontinuous-sac", max_env_step=256, run_dir=str(tmp_path),
                   progress=False, overrides=TINY + ["policy.model.actor_hidden=(32, 32)",
                                                    "policy.model.critic_hidden=(32, 32)"])
    assert result["env_step"] >= 256 and result["train_iter"] > 0


# `make test` installs the [mujoco] extra, so CI (CI=true) runs this test and fails without it.
@pytest.mark.skipif(not HAS_MUJOCO and not os.environ.get("CI"),
                    reason="Hopper needs MuJoCo, which is not installed here: "
                           "pip install \"rlpipe[mujoco]\" (make test installs it)")
def test_hopper_sac_smoke(tmp_path):
    result = train("hopper-sac", max_env_step=256, run_dir=str(tmp_path), progress=False,
                   overrides=TINY + ["policy.model.actor_hidden=(32, 32)",
                                     "policy.model.critic_hidden=(32, 32)"])
    assert result["env_step"] >= 256 and result["train_iter"] > 0


def test_hopper_without_mujoco_names_the_pip_command(monkeypatch):
    entry = get_entry("hopper-sac")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "mujoco" else real(name, *a))
    with pytest.raises(MissingDependencyError, match=r'pip install "rlpipe\[mujoco\]"'):
        entry.check_requirements()


@pytest.mark.slow
def test_pendulum_sac_seed0_reaches_minus_400_within_20k_steps(tmp_path):
    result = train("pendulum-sac", seed=0, max_env_step=20_000, run_dir=str(tmp_path),
                   progress=False)
    assert result["env_step"] <= 20_000 + 32
    assert result["best_eval_value"] >= -400, result
