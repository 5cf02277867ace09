"""Short Pong and Hopper runs through the whole path: train → checkpoints → `rlpipe eval`'s
evaluation of the run folder. On the gymnasium paths CI has (ale-py frames, MuJoCo); no
learning is asked of a few thousand steps, only that every stage works on the real envs."""
import importlib.util
import math
import os

import pytest

from rlpipe.training import train
from rlpipe.tools.evaluate import evaluate_run

# `make test` installs the [atari] and [mujoco] extras: in CI (CI=true) these run, never skip.
needs_ale = pytest.mark.skipif(importlib.util.find_spec("ale_py") is None
                               and not os.environ.get("CI"),
                               reason='ale-py not installed: pip install "rlpipe[atari]"')
needs_mujoco = pytest.mark.skipif(importlib.util.find_spec("mujoco") is None
                                  and not os.environ.get("CI"),
                                  reason='MuJoCo not installed: pip install "rlpipe[mujoco]"')


def _checkpoints(run_dir):
    return sorted(p.name for p in (run_dir / "ckpt").glob("*.pt"))


@pytest.mark.slow
@needs_ale
def test_pong_dqn_short_run_trains_checkpoints_and_evaluates(tmp_path):
    run_dir = tmp_path / "pong"
    summary = train("pong-dqn", max_env_step=2048, run_dir=str(run_dir), progress=False,
                    overrides=["env.mode=sync", "env.n_envs=4", "env.eval_n_envs=1",
                               "replay.capacity=4096", "replay.min_samples=512",
                               "policy.collect.random_collect_size=512",
                               "policy.learn.update_per_collect=1",
                               "policy.eval.evaluator.eval_freq=1000000",
                               "policy.eval.evaluator.n_episode=1", "ckpt.train_freq=100"])
    assert summary["env_step"] >= 2048 and summary["train_iter"] >= 100
    assert any(name.startswith("iter_") for name in _checkpoints(run_dir)), _checkpoints(run_dir)
    # an eval episode is a whole game of Pong: first to 21 points, scores in [-21, 21]
    assert -21 <= summary["eval_value"] <= 21
    result = evaluate_run(str(run_dir), episodes=1)
    assert result["episodes"] == 1 and -21 <= result["mean_return"] <= 21


@pytest.mark.slow
@needs_mujoco
def test_hopper_sac_short_run_trains_checkpoints_and_evaluates(tmp_path):
    run_dir = tmp_path / "hopper"
    summary = train("hopper-sac", max_env_step=3000, run_dir=str(run_dir), progress=False,
                    overrides=["replay.min_samples=1000", "policy.collect.random_collect_size=1000",
                               "policy.model.actor_hidden=(64, 64)",
                               "policy.model.critic_hidden=(64, 64)",
                               "policy.learn.batch_size=64",
                               "policy.eval.evaluator.eval_freq=1000",
                               "policy.eval.evaluator.n_episode=2", "ckpt.train_freq=500"])
    assert summary["env_step"] >= 3000 and summary["train_iter"] >= 1000
    assert "final.pt" in _checkpoints(run_dir) or "best.pt" in _checkpoints(run_dir)
    result = evaluate_run(str(run_dir), episodes=2)
    assert result["episodes"] == 2 and math.isfinite(result["mean_return"])
