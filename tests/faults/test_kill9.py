"""Fault injection: kill -9 at 10 random moments of one run, each followed by `--resume`.

After every kill, resume's first step (cutting metrics.jsonl and log.txt back to what the
chosen checkpoint covered) leaves no row past that checkpoint and no duplicate; at the end the
whole run's metrics, log and TensorBoard have one row per iteration on the env-step axis: no hole,
no duplicate.
"""
import collections
import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlpipe.runs import RunDir
from rlpipe.pipelines.resume import prepare_resume

from ._run import REPO, SMALL

KILLS = 10
EVAL_LINE = re.compile(r"eval at train_iter \d+, env_step (\d+)")


def _start(stderr, *args):
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.Popen([sys.executable, "-m", "rlpipe.cli", "train", *args, "--no-progress"],
                            stdout=subprocess.DEVNULL, stderr=stderr, env=env, cwd=str(REPO))


def _wait_for(condition, proc, what, timeout=90.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended (rc {proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"no {what} within {timeout} s")
        time.sleep(0.02)


def _metric_steps(run):
    steps = []
    for line in run.metrics.read_text().splitlines():
        steps.append(json.loads(line)["env_step"])  # a torn row would fail here
    return steps


def _eval_steps(run):
    return [int(m.group(1)) for m in EVAL_LINE.finditer(run.log.read_text())]


def _strictly_increasing(steps):
    return all(a < b for a, b in zip(steps, steps[1:]))


@pytest.mark.slow
def test_kill9_at_random_moments_then_resume_keeps_logs_and_checkpoints_consistent(tmp_path):
    rng = random.Random(20)
    run = RunDir(tmp_path / "run")
    sets = [a for s in SMALL for a in ("--set", s)]
    stderr = open(tmp_path / "stderr.txt", "wb")
    for kill in range(KILLS):
        if kill == 0:
            proc = _start(stderr, "cartpole-dqn", "--run-dir", str(run.root), "--max-env-steps",
                          "200000", *sets)
            _wait_for(run.latest.exists, proc, "a first checkpoint")
        else:
            start = run.log.stat().st_size  # resume cut log.txt back to this
            proc = _start(stderr, "--resume", str(run.root))
            _wait_for(lambda: b"resumed from" in run.log.read_bytes()[start:], proc,
                      "the resumed run to start")
        time.sleep(rng.uniform(0.0, 1.5))
        assert proc.poll() is None, "the run finished before it could be killed: raise its budget"
        proc.kill()  # SIGKILL
        proc.wait()
        chosen = Path(prepare_resume(str(run.root)))  # what --resume does first
        covered = json.loads(run.manifest(chosen.name).read_text())["meta"]["env_step"]
        steps, evals = _metric_steps(run), _eval_steps(run)
        assert _strictly_increasing(steps) and steps[-1] == covered, (kill, steps[-5:], covered)
        assert _strictly_increasing(evals) and (not evals or evals[-1] <= covered), (kill, evals)
    done = subprocess.run([sys.executable, "-m", "rlpipe.cli", "train", "--resume", str(run.root),
                           "--no-progress", "--max-env-steps", str(covered + 2048)],
                          capture_output=True, text=True, timeout=120, cwd=str(REPO),
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-3000:]
    steps, evals = _metric_steps(run), _eval_steps(run)
    stride = collections.Counter(b - a for a, b in zip(steps, steps[1:])).most_common(1)[0][0]
    assert steps == list(range(steps[0], steps[-1] + 1, stride)), "a hole or a duplicate in metrics.jsonl"
    assert _strictly_increasing(evals)
    assert "resumed from" in run.log.read_text()
    stderr.close()
    _assert_tensorboard_agrees(run, steps)


def _assert_tensorboard_agrees(run, steps):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run.tb), size_guidance={"scalars": 0})
    events.Reload()
    rows = [json.loads(line) for line in run.metrics.read_text().splitlines()]
    tag = "collect/episodes"
    expected = [r["env_step"] for r in rows if tag in r]
    seen = [e.step for e in events.Scalars(tag)]
    assert seen == expected, "TensorBoard and metrics.jsonl disagree on the env-step axis"
