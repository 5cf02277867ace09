"""Fault injection: two processes on one run folder.

A run folder has one writer: while `rlpipe train` writes it, a second `--resume` and a
`--run-dir` naming it are refused in one line naming the writer's pid, and `rlpipe eval` and
`plot` read it meanwhile. kill -9 of the writer leaves no stale lock: a new `--resume` runs.
"""
import json
import os
import subprocess
import sys
import time

import pytest

from rlpipe.middleware import read_metrics
from rlpipe.runs import LOCK_FILE, RunDir, RunLock, RunLockedError

from ._run import REPO, SMALL, cli_subprocess


def _start_run(run_dir, stderr):
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    sets = [a for s in SMALL for a in ("--set", s)]
    return subprocess.Popen([sys.executable, "-m", "rlpipe.cli", "train", "cartpole-dqn",
                             "--run-dir", str(run_dir), "--max-env-steps", "200000",
                             "--no-progress", *sets],
                            stdout=subprocess.DEVNULL, stderr=stderr, env=env, cwd=str(REPO))


def _wait_for(condition, proc, what, timeout=90.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended (rc {proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"no {what} within {timeout} s")
        time.sleep(0.05)


def _has_best(run):
    return run.checkpoint("best.pt").is_file() and run.manifest("best.pt").is_file()


@pytest.mark.slow
def test_a_second_writer_is_refused_naming_the_pid_and_kill9_leaves_no_stale_lock(tmp_path):
    run = RunDir(tmp_path / "run")
    with open(tmp_path / "stderr.txt", "wb") as stderr:
        proc = _start_run(run.root, stderr)
        try:
            _wait_for(lambda: run.latest.exists() and _has_best(run), proc,
                      "a first checkpoint and evaluation")
            assert (run.root / LOCK_FILE).read_text().strip() == str(proc.pid)
            rows_before = len(run.metrics.read_bytes().splitlines())
            for args in (["train", "--resume", str(run.root), "--no-progress"],
                         ["train", "cartpole-dqn", "--run-dir", str(run.root), "--overwrite",
                          "--no-progress"]):
                refused = cli_subprocess(*args)
                lines = refused.stderr.strip().splitlines()
                assert refused.returncode == 2, refused.stderr[-2000:]
                assert len(lines) == 1 and f"process {proc.pid}" in lines[0], lines
                assert "being written" in lines[0] and "--resume" in lines[0], lines
            assert proc.poll() is None, "the refused writers stopped the run"
            assert run.config.is_file(), "--overwrite deleted the folder of a live run"

            # readers take no lock and read only complete files while the run writes
            evaluated = cli_subprocess("eval", str(run.root), "--episodes", "1")
            assert evaluated.returncode == 0, evaluated.stderr[-2000:]
            plotted = cli_subprocess("plot", str(run.root), "--out", str(tmp_path / "c.png"))
            assert plotted.returncode == 0, plotted.stderr[-2000:]
            assert (tmp_path / "c.png").stat().st_size > 0
            assert len(run.metrics.read_bytes().splitlines()) >= rows_before, "the run stopped"
        finally:
            proc.kill()  # SIGKILL: the OS drops the lock with the process
            proc.wait()
    covered = json.loads(run.manifest(json.loads(run.latest.read_text())["file"]).read_text())
    done = cli_subprocess("train", "--resume", str(run.root), "--no-progress", "--max-env-steps",
                          str(covered["meta"]["env_step"] + 512))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "resumed from" in run.log.read_text()
    assert (run.root / LOCK_FILE).read_text().strip() != str(proc.pid)


def test_the_lock_is_held_for_the_run_and_released_after_it(tmp_path):
    """In one process: a second lock on a held folder is refused; released, it is free again."""
    first = RunLock(tmp_path).acquire()
    with pytest.raises(RunLockedError, match=f"process {os.getpid()}"):
        RunLock(tmp_path).acquire()
    first.release()
    with RunLock(tmp_path):
        pass


def test_a_forked_child_does_not_keep_the_writers_lock(tmp_path):
    """An env worker or collector forked by the writer, still alive when the writer ends (or
    is killed), leaves the folder free."""
    lock = RunLock(tmp_path).acquire()
    read_end, write_end = os.pipe()
    ready_read, ready_write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: say it runs, wait until the parent is done, then exit
        os.write(ready_write, b"r")
        os.read(read_end, 1)
        os._exit(0)
    try:
        assert os.read(ready_read, 1) == b"r"
        lock.release()
        with RunLock(tmp_path):  # the child lives on, the folder is free
            pass
    finally:
        os.write(write_end, b"x")
        os.waitpid(child, 0)
        for fd in (read_end, write_end, ready_read, ready_write):
            os.close(fd)


def test_a_row_being_written_is_skipped_not_an_error(tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text('{"env_step": 1, "x": 1.5}\n{"env_step": 2, "x": 1}\n{"env_step": 3, "x": 1')
    assert [r["env_step"] for r in read_metrics(metrics)] == [1, 2]
    with open(metrics, "a") as f:
        f.write("2}\n")  # the writer finishes its row
    assert [r["env_step"] for r in read_metrics(metrics)] == [1, 2, 3]
