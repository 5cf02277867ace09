"""The driver's bar of a Ray run: the learner's `ProgressReporter` publishes progress and log
lines through the hub, `launch(on_poll=...)` hands the hub's state to the driver every look, and
`DriverProgress` draws the bar and prints each learner line once (fast tests; the run through
the CLI is in tests/zoo/test_distributed.py)."""
import fcntl
import importlib.util
import io
import json
import logging
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
import types

import pytest

from rlpipe.engine import Role, parallel
from rlpipe.engine._ray import _Member, _supervise
from rlpipe.middleware.progress import BarLogHandler, DriverProgress, ProgressReporter


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Remote:
    """`actor.method.remote(*args)` of a fake actor: calls `fn` at once, returns its value."""

    def __init__(self, fn):
        self.remote = fn


class FakeRay:
    """The calls `_supervise` makes of `ray`: the learner's future is ready at look `ready_at`."""

    def __init__(self, learner_future, ready_at):
        self.learner_future, self.ready_at, self.looks = learner_future, ready_at, 0

    def wait(self, refs, num_returns=1, timeout=None):
        if self.learner_future not in refs:  # the startup pings: never answered here
            return [], list(refs)
        self.looks += 1
        if self.looks >= self.ready_at:
            return [self.learner_future], []
        return [], list(refs)

    def get(self, ref, timeout=None):
        return {"learner result": 42}.get(ref, ref) if isinstance(ref, str) else ref


class FakeHub:
    """A hub whose status blob the test changes between the driver's looks."""

    def __init__(self):
        self.status, self.version, self.polled = {}, 0, []
        self.poll = Remote(self._poll)

    def _poll(self, name, have, timeout):
        self.polled.append(name)
        return {"version": self.version, "value": None, "info": dict(self.status),
                "counters": {"env_step": 10 * len(self.polled)}, "finished": False}


def test_supervise_calls_on_poll_at_each_look_and_once_after_the_learner_returned():
    hub = FakeHub()
    ray = FakeRay("learner result", ready_at=3)
    learner = _Member("learner", Role.LEARNER, types.SimpleNamespace(
        ping=Remote(lambda: "pong")), future="learner result")
    seen = []

    def on_poll(state):
        seen.append(state)
        hub.version += 1
        hub.status = {"train_iter": hub.version}  # the learner reports between the looks

    result = _supervise(ray, hub, [learner], types.SimpleNamespace(finish=False), 0, (), on_poll)
    assert result == 42
    assert len(seen) == 4 and set(hub.polled) == {parallel.STATUS}
    assert seen[0] == {"counters": {"env_step": 10}, "finished": False, "status": {},
                       "status_version": 0}
    assert seen[-1]["status"] == {"train_iter": 3} and seen[-1]["status_version"] == 3


def test_without_on_poll_the_driver_never_polls_the_hub():
    hub = FakeHub()
    ray = FakeRay("learner result", ready_at=2)
    learner = _Member("learner", Role.LEARNER, types.SimpleNamespace(
        ping=Remote(lambda: "pong")), future="learner result")
    _supervise(ray, hub, [learner], types.SimpleNamespace(finish=False), 0, ())
    assert hub.polled == []


def test_on_poll_is_refused_with_the_local_backend():
    with pytest.raises(ValueError, match="on_poll.*backend='ray'"):
        parallel.launch(lambda: None, collectors=1, backend="local", on_poll=print)


@pytest.fixture
def hub_links():
    learner, _, _, close = parallel.local_links(collectors=1)
    yield learner
    close()


@pytest.fixture
def learner_log():
    """A logger standing for the learner's and the driver's `rlpipe` logger, with a console
    (a BarLogHandler writing to a string) and a log file stand-in that must get nothing."""
    logger = logging.getLogger("rlpipe_test_progress")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    out = io.StringIO()
    console = BarLogHandler(out)
    console.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    file_like = logging.FileHandler("/dev/null", delay=True)
    file_like.emit = lambda record: pytest.fail(f"a file handler got {record.getMessage()!r}")
    yield logger, out, [console, file_like]
    for h in list(logger.handlers):
        logger.removeHandler(h)


def _state(link):
    update = link.poll(parallel.STATUS, 0, 0.0)
    return {"counters": update.counters, "finished": update.finished, "status": update.info,
            "status_version": update.version}


def test_learner_lines_reach_the_driver_console_once_and_the_bar_shows_the_progress(
        hub_links, learner_log):
    logger, console_out, driver_handlers = learner_log
    clock = FakeClock()
    reporter = ProgressReporter(hub_links, interval_s=0.5, keep_s=10.0, clock=clock)
    logger.addHandler(reporter)  # on the learner
    bar_out = io.StringIO()
    driver = DriverProgress(total_env_steps=1000, desc="cartpole", file=bar_out, disable=False)

    logger.info("eval at train_iter %d: mean return %.2f", 0, 9.5)
    assert reporter.report({"env_step": 100, "train_iter": 8, "eval": 9.5, "iterations": 4,
                            "elapsed": 2.0})
    logger.removeHandler(reporter)
    for h in driver_handlers:  # the driver: the same logger name, its console and file
        logger.addHandler(h)
    driver(_state(hub_links))
    driver(_state(hub_links))  # the same report seen twice: its line is printed once
    logger.removeHandler(driver_handlers[0])
    logger.removeHandler(driver_handlers[1])

    clock.now = 0.2  # within interval_s: nothing is sent, the line waits for the next report
    logger.addHandler(reporter)
    logger.info("eval at train_iter %d: mean return %.2f", 16, 50.25)
    assert not reporter.report({"env_step": 600, "train_iter": 16, "eval": 50.25})
    clock.now = 0.6
    assert reporter.report({"iterations": 8, "elapsed": 4.0})
    logger.removeHandler(reporter)
    for h in driver_handlers:
        logger.addHandler(h)
    driver(_state(hub_links))
    driver.close()
    driver.close()  # idempotent

    lines = console_out.getvalue().splitlines()
    assert lines == ["INFO rlpipe_test_progress: eval at train_iter 0: mean return 9.50",
                     "INFO rlpipe_test_progress: eval at train_iter 16: mean return 50.25"]
    bar = bar_out.getvalue()
    assert "cartpole" in bar and "100/1000" in bar and "600/1000" in bar
    assert "train_iter=16" in bar and "eval=50.25" in bar and "it/s=2.00" in bar


def test_lines_stay_in_the_reports_for_keep_s_and_a_gap_is_said_once(hub_links, learner_log):
    logger, console_out, driver_handlers = learner_log
    clock = FakeClock()
    reporter = ProgressReporter(hub_links, interval_s=0.5, keep_s=2.0, clock=clock)
    logger.addHandler(reporter)
    logger.info("first")
    reporter.report(force=True)
    clock.now = 1.0
    logger.info("second")
    reporter.report(force=True)
    assert [r[4] for r in _state(hub_links)["status"]["records"]] == ["first", "second"]
    clock.now = 2.5  # "first" was sent 2.5 s ago: it is dropped; "second" (1.5 s) stays
    logger.info("third")
    reporter.report(force=True)
    assert [r[4] for r in _state(hub_links)["status"]["records"]] == ["second", "third"]
    logger.removeHandler(reporter)

    for h in driver_handlers:
        logger.addHandler(h)
    driver = DriverProgress(show_bar=False)  # the driver looked only now: "first" is gone
    assert driver.disabled
    driver(_state(hub_links))
    out = console_out.getvalue()
    assert out.count("1 log lines of the learner are not shown here") == 1
    assert "first" not in out and out.count("second") == 1 and out.count("third") == 1


def test_the_reporter_rejects_a_window_shorter_than_its_interval(hub_links):
    with pytest.raises(ValueError, match="interval_s < keep_s"):
        ProgressReporter(hub_links, interval_s=1.0, keep_s=0.5)


def test_the_driver_bar_is_made_at_the_first_look_and_off_without_a_terminal():
    out = io.StringIO()
    driver = DriverProgress(total_env_steps=100, file=out)  # a StringIO is no terminal
    assert driver.disabled and out.getvalue() == ""
    forced = DriverProgress(total_env_steps=100, file=out, disable=False)
    assert not forced.disabled and out.getvalue() == ""  # nothing drawn before the first look
    forced({"counters": {"env_step": 40}, "finished": False, "status": {}, "status_version": 0})
    assert "40/100" in out.getvalue()  # before the learner's first report: the hub's counter
    forced.close()


def test_after_the_learners_first_report_the_bar_never_counts_what_collectors_sent():
    out = io.StringIO()
    driver = DriverProgress(total_env_steps=3000, file=out, disable=False)
    driver({"counters": {"env_step": 0}, "status": {}})
    driver({"counters": {"env_step": 512}, "status": {}})  # before the learner's first report
    # its first report is behind what the collectors sent: the bar goes back to it, and on
    driver({"counters": {"env_step": 2560}, "status": {"env_step": 256, "train_iter": 16}})
    driver({"counters": {"env_step": 3328}, "status": {"env_step": 3072, "train_iter": 192}})
    # a later look without the learner's status: the collectors' count is ahead (one batch
    # the learner never took in), and the bar keeps the learner's figure
    driver({"counters": {"env_step": 3328}, "status": {}})
    driver.close()
    assert "3072step" in out.getvalue() and "3328" not in out.getvalue()


# ---- through the CLI, on Ray ---------------------------------------------------------------

SMALL = ["policy.collect.random_collect_size=256", "replay.min_samples=256",
         "policy.eval.evaluator.n_episode=2", "policy.eval.evaluator.eval_freq=64",
         "policy.learn.update_per_collect=16", "policy.model.hidden=(32, 32)",
         "env.stop_value=1e9", "ckpt.train_freq=64"]


def run_on_a_terminal(cmd, timeout=240.0):
    """Run `cmd` with its stderr on a pseudo-terminal of 160 columns (so tqdm draws, as for a
    person); returns (returncode, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave,
                            env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.5)[0]:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: every writer of the terminal is gone
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:  # Ray's own processes may still hold the terminal
                break
        else:
            proc.kill()
            pytest.fail(f"the run did not end within {timeout} s")
        stdout = proc.communicate(timeout=30)[0]
    finally:
        os.close(master)
    return proc.returncode, stdout.decode(), b"".join(chunks).decode(errors="replace")


@pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                    reason='needs Ray: pip install "rlpipe[ray]"')
@pytest.mark.slow
@pytest.mark.parametrize("no_progress", [False, True], ids=["bar", "no-progress"])
def test_a_ray_run_shows_the_bar_and_each_eval_line_once_on_the_driver(tmp_path, no_progress):
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "rlpipe.cli", "train", "cartpole-dqn", "--collectors", "1",
           "--max-env-steps", "3000", "--run-dir", str(run_dir)]
    for item in SMALL:
        cmd += ["--set", item]
    if no_progress:
        cmd.append("--no-progress")
    code, stdout, terminal = run_on_a_terminal(cmd)
    assert code == 0, terminal[-3000:]
    result = json.loads(stdout.strip().splitlines()[-1])

    evals = re.findall(r"(?:final )?eval at train_iter \d+, env_step \d+: mean return .*episodes\)",
                       (run_dir / "log.txt").read_text())
    assert len(evals) >= 3 and evals[-1].startswith("final eval at train_iter "
                                                    f"{result['train_iter']},")
    assert len(set(evals)) == len(evals)  # log.txt has each once (the driver writes none)
    for line in evals:  # printed once, by the driver, as a line of its own (not onto the bar)
        assert terminal.count(line) == 1, (line, terminal[-3000:])
        assert re.search(rf"(^|[\r\n])INFO rlpipe.middleware.evaluator: {re.escape(line)}\r?\n",
                         terminal), (line, terminal[-3000:])
    assert "pid=" not in terminal  # nothing of the learner came as Ray's forwarded lines

    drawn = [part for part in re.split(r"[\r\n]", terminal) if "train_iter=" in part]
    if no_progress:
        assert drawn == []
    else:  # the bar's final state: the run's env steps, train_iter and final eval return
        assert f"{result['env_step']}step" in drawn[-1] or f"{result['env_step']}/3000" in drawn[-1]
        assert f"train_iter={result['train_iter']}" in drawn[-1]
        assert f"eval={result['eval_value']:.2f}" in drawn[-1] and "it/s=" in drawn[-1]
