"""Resuming runs: exact in sync mode, after kill -9, after SIGINT/SIGTERM; clear errors."""
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from rlpipe.cli import main
from rlpipe.middleware import load_checkpoint
from rlpipe.training import resume, train

SMALL = ["policy.collect.random_collect_size=256", "replay.min_samples=256",
         "policy.eval.evaluator.n_episode=2", "policy.eval.evaluator.eval_freq=64",
         "policy.learn.update_per_collect=16", "policy.model.hidden=(32, 32)", "env.stop_value=1e9",
         "ckpt.train_freq=32"]


def _weights(run_dir):
    return load_checkpoint(run_dir, which="final")["policy"]


def _assert_same(a, b, path="policy"):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for key in a:
            _assert_same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b), f"{path} differs"
    else:
        assert a == b, f"{path}: {a} != {b}"


def test_a_resume_that_cannot_be_exact_says_why(tmp_path, caplog):
    # envs in subprocesses cannot be captured: the resume goes on from fresh episodes and its
    # warning carries the env manager's own reason (EnvPool's, for an EnvPool run)
    run_dir = str(tmp_path / "run")
    first = train("cartpole-dqn", seed=0, max_env_step=512, run_dir=run_dir, progress=False,
                  overrides=SMALL + ["env.mode=async", "env.n_envs=2"])
    with caplog.at_level("WARNING", logger="rlpipe.pipelines.resume"):
        more = resume(run_dir, max_env_step=1024, progress=False)
    assert more["env_step"] > first["env_step"]
    unsaved = [r.getMessage() for r in caplog.records if "were not saved" in r.getMessage()]
    assert len(unsaved) == 2, unsaved  # the collector's envs and the evaluator's
    assert all("async subprocesses cannot be captured" in m for m in unsaved), unsaved


@pytest.mark.slow
def test_stopped_and_resumed_run_ends_with_identical_weights(tmp_path):
    whole, split = str(tmp_path / "whole"), str(tmp_path / "split")
    a = train("cartpole-dqn", seed=3, max_env_step=3072, run_dir=whole, progress=False,
              overrides=SMALL)
    first = train("cartpole-dqn", seed=3, max_env_step=1536, run_dir=split, progress=False,
                  overrides=SMALL)
    assert first["env_step"] == 1536
    b = resume(split, max_env_step=3072, progress=False)
    assert (a["env_step"], a["train_iter"]) == (b["env_step"], b["train_iter"])
    _assert_same(_weights(whole), _weights(split))


def test_resume_errors_name_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such run folder"):
        resume(str(tmp_path / "missing"))
    run_dir = str(tmp_path / "run")
    train("cartpole-dqn", seed=0, max_env_step=512, run_dir=run_dir, progress=False,
          overrides=SMALL)
    with pytest.raises(ValueError, match="trained 'cartpole-dqn', not 'acrobot-dqn'"):
        resume(run_dir, name="acrobot-dqn")
    assert main(["train", "acrobot-dqn", "--resume", run_dir]) == 2


def _train_process(run_dir, *extra):
    cmd = [sys.executable, "-m", "rlpipe.cli", "train", "cartpole-dqn", "--run-dir", run_dir,
           "--no-progress", "--max-env-steps", "200000", *extra]
    for item in SMALL:
        cmd += ["--set", item]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_checkpoint(run_dir, proc, min_iter, timeout=120):
    """Wait until the run has written a periodic checkpoint at train_iter >= `min_iter` (its
    name depends on where the update schedule puts train_iter; older ones are pruned)."""
    deadline = time.time() + timeout
    folder = os.path.join(run_dir, "ckpt")
    while True:
        names = os.listdir(folder) if os.path.isdir(folder) else []
        if any(n.startswith("iter_") and n.endswith(".pt") and int(n[5:-3]) >= min_iter
               for n in names):
            return
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.time() < deadline, f"no checkpoint at train_iter >= {min_iter} in {folder}"
        time.sleep(0.1)


@pytest.mark.slow
def test_kill_9_then_resume_continues_from_the_last_checkpoint(tmp_path):
    run_dir = str(tmp_path / "run")
    proc = _train_process(run_dir)
    _wait_for_checkpoint(run_dir, proc, 64)
    time.sleep(1.0)
    proc.kill()
    proc.wait()
    saved = load_checkpoint(run_dir, which="resumable")["meta"]["env_step"]
    result = resume(run_dir, max_env_step=saved + 1024, progress=False)
    assert saved < result["env_step"] <= saved + 1024 + 256


@pytest.mark.slow
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_finishes_the_iteration_checkpoints_and_exits(tmp_path, signum, code):
    run_dir = str(tmp_path / "run")
    proc = _train_process(run_dir)
    _wait_for_checkpoint(run_dir, proc, 32)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err[-2000:]
    assert "--resume" in err
    final = load_checkpoint(run_dir, which="final")
    assert final["resume"] and final["meta"]["env_step"] > 0


def test_nan_loss_stops_the_run_and_keeps_the_last_finite_checkpoint(tmp_path, monkeypatch):
    from rlpipe.middleware import NonFiniteLossError
    from rlpipe.policies import DQNPolicy

    real = DQNPolicy._forward_learn
    calls = []

    def poisoned(self, batch):
        out = real(self, batch)
        calls.append(1)
        if len(calls) > 80:
            out["loss"] = float("nan")
        return out

    monkeypatch.setattr(DQNPolicy, "_forward_learn", poisoned)
    run_dir = str(tmp_path / "run")
    with pytest.raises(NonFiniteLossError, match=r"OffPolicyLearner: 'loss' is nan at train_iter 80"):
        train("cartpole-dqn", seed=0, max_env_step=4096, run_dir=run_dir, progress=False,
              overrides=SMALL)
    last = load_checkpoint(run_dir, which="resumable")
    assert last["meta"]["train_iter"] == 64
    assert all(torch.isfinite(t).all() for t in last["policy"]["online"].values())
