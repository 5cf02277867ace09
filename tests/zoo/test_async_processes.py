"""`--async` on off-policy entries: collection and evaluation in child processes (no Ray)."""
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import pytest

from rlpipe.middleware import load_checkpoint
from rlpipe.training import resume, train
from rlpipe.tools.evaluate import evaluate_run

from ._waiting import wait_for_periodic_checkpoint

SMALL = ["policy.collect.random_collect_size=256", "replay.min_samples=256",
         "policy.eval.evaluator.n_episode=2", "policy.eval.evaluator.eval_freq=64",
         "policy.learn.update_per_collect=16", "policy.model.hidden=(32, 32)",
         "env.stop_value=1e9", "ckpt.train_freq=32"]


def test_async_run_collects_and_evaluates_in_child_processes_and_resumes(tmp_path):
    run_dir = str(tmp_path / "run")
    result = train("cartpole-dqn", seed=1, max_env_step=3000, run_dir=run_dir, progress=False,
                   async_mode=True, overrides=SMALL)
    assert multiprocessing.active_children() == []  # no child left behind
    assert result["collectors"] == 1 and result["collector_restarts"] == 0
    assert 3000 <= result["env_step"] <= 3000 + 3 * 256  # the collector runs ahead a little
    with open(os.path.join(run_dir, "config.json")) as f:
        parallel = json.load(f)["config"]["parallel"]
    assert parallel == {**parallel, "collectors": 1, "evaluator": True, "backend": "local"}
    log = open(os.path.join(run_dir, "log.txt")).read()
    assert "distributed run: 1 learner, 1 collectors, 1 evaluator" in log
    assert "episodes, evaluator process)" in log  # the evaluations came from the evaluator process
    final = load_checkpoint(run_dir, which="final")
    assert final["meta"]["env_step"] == result["env_step"]
    assert load_checkpoint(run_dir, which="best")["meta"]["eval_value"] == result["best_eval_value"]

    more = resume(run_dir, max_env_step=result["env_step"] + 1024, progress=False)
    assert more["collectors"] == 1
    assert result["env_step"] < more["env_step"] <= result["env_step"] + 1024 + 3 * 256
    assert multiprocessing.active_children() == []


def test_on_policy_entries_keep_async_mode_in_one_process(tmp_path):
    result = train("cartpole-ppo", seed=0, max_env_step=1024, run_dir=str(tmp_path / "run"),
                   progress=False, async_mode=True, overrides=["env.stop_value=1e9"])
    assert "collectors" not in result and result["env_step"] >= 1024


@pytest.mark.slow
def test_cartpole_dqn_async_reaches_195_and_best_pt_reproduces_it(tmp_path):
    result = train("cartpole-dqn", seed=0, max_env_step=30_000, run_dir=str(tmp_path),
                   progress=False, async_mode=True)
    assert result["best_eval_value"] >= 195, result
    measured = evaluate_run(str(tmp_path), episodes=10, seed=2024)
    assert measured["checkpoint"].endswith("best.pt")  # the evaluator's weights, not newer ones
    # on other episodes the best weights still solve CartPole; how far above 195 varies (a
    # best of 453.7 read 317.4 on these ten), since the best evaluation is a maximum
    assert measured["mean_return"] >= 195, (measured, result)


@pytest.mark.slow
def test_ctrl_c_stops_every_process_and_the_run_resumes(tmp_path):
    run_dir = str(tmp_path / "run")
    cmd = [sys.executable, "-m", "rlpipe.cli", "train", "cartpole-dqn", "--async",
           "--run-dir", run_dir, "--no-progress", "--max-env-steps", "200000"]
    for item in SMALL:
        cmd += ["--set", item]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    wait_for_periodic_checkpoint(proc, run_dir)
    os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C in a terminal: the whole foreground group
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, err[-3000:]
    assert "--resume" in err
    time.sleep(1.0)
    leftover = subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True, text=True)
    assert leftover.stdout.strip() == "", "processes of the run survived Ctrl-C"
    saved = load_checkpoint(run_dir, which="final")["meta"]["env_step"]
    more = resume(run_dir, max_env_step=saved + 512, progress=False)
    assert saved < more["env_step"] <= saved + 512 + 3 * 256
