"""Fault injection: the evaluator process of an `--evaluator` run killed with kill -9.

The run goes on: the evaluator is started again (forked from the learner mid-run, it begins
with a fresh task), evaluates the newer weights, and log.txt and the summary say it restarted.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlpipe.runs import RunDir

from ._run import REPO, SMALL

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(),
                                reason="finds the evaluator's pid in /proc (Linux)")
EVAL_LINE = re.compile(r"eval at train_iter (\d+).*evaluator process\)")


def _children(pid):
    """The child processes of `pid`, oldest first."""
    kids = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    started = {k: int(Path(f"/proc/{k}/stat").read_text().rsplit(")", 1)[1].split()[19])
               for k in kids}
    return sorted(kids, key=started.get)


@pytest.mark.slow
def test_a_killed_evaluator_is_restarted_and_the_run_goes_on(tmp_path):
    run = RunDir(tmp_path / "run")
    sets = [a for s in SMALL for a in ("--set", s)]
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.Popen([sys.executable, "-m", "rlpipe.cli", "train", "cartpole-dqn",
                             "--run-dir", str(run.root), "--collectors", "1", "--evaluator",
                             "--backend", "local", "--max-env-steps", "6000", "--no-progress",
                             *sets], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=str(REPO))
    try:
        deadline = time.monotonic() + 120
        while not (run.log.is_file() and EVAL_LINE.search(run.log.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, "no first evaluation"
            time.sleep(0.05)
        collector, evaluator = _children(proc.pid)  # started in this order
        os.kill(evaluator, signal.SIGKILL)
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err[-3000:]
    log = run.log.read_text()
    assert "evaluator died (exit code -9); restarting it" in log
    after = log.split("evaluator died", 1)[1]
    assert EVAL_LINE.search(after), "the restarted evaluator never evaluated"
    assert "restarts in this run: 1 (evaluator: 1)" in log
    assert "restarted: evaluator 1x" in err.splitlines()  # the summary (on stderr) says it too
    assert json.loads(out.strip().splitlines()[-1])["env_step"] >= 6000


def _ray_evaluator(driver):
    """The pid of the Ray evaluator actor's process among the driver's descendants (the local
    Ray that `rlpipe train` starts runs under it), or None while there is none."""
    todo, seen = [driver], []
    while todo:
        pid = todo.pop()
        try:
            kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:  # it ended meanwhile
            continue
        todo += [int(k) for k in kids]
        seen += [int(k) for k in kids]
    for pid in seen:
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::Evaluator"):
                return pid
        except OSError:
            continue
    return None


@pytest.mark.slow
def test_a_killed_ray_evaluator_is_restarted_and_the_run_goes_on(tmp_path):
    pytest.importorskip("ray")
    run = RunDir(tmp_path / "run")
    sets = [a for s in SMALL for a in ("--set", s)]
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "RAY_USAGE_STATS_ENABLED": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "rlpipe.cli", "train", "cartpole-dqn",
                             "--run-dir", str(run.root), "--collectors", "1", "--evaluator",
                             "--backend", "ray", "--max-env-steps", "6000", "--no-progress",
                             *sets], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=str(REPO), start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not (run.log.is_file() and EVAL_LINE.search(run.log.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, "no first evaluation"
            time.sleep(0.1)
        evaluator = _ray_evaluator(proc.pid)
        assert evaluator is not None, "no ray::Evaluator process under the driver"
        os.kill(evaluator, signal.SIGKILL)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the driver and the local Ray it started
            proc.wait()
    assert proc.returncode == 0, err[-3000:]
    log = run.log.read_text()
    died = re.search(r"evaluator died \(.*\); Ray restarts it \(its restart 1, 1 in this run\)",
                     log)
    assert died, log[-3000:]
    assert EVAL_LINE.search(log[died.end():]), "the restarted evaluator never evaluated"
    assert "restarts in this run: 1 (evaluator: 1)" in log
    assert "restarted: evaluator 1x" in err.splitlines()  # the summary (on stderr) says it too
    assert json.loads(out.strip().splitlines()[-1])["env_step"] >= 6000
