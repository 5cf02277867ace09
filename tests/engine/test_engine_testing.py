"""The testing aids: Sequencer and EventLog."""
import threading

import pytest

from rlpipe.engine import contract_of
from rlpipe.engine.testing import EventLog, Sequencer


def test_sequencer_orders_threads():
    seq = Sequencer()
    order = []

    def step(n):
        with seq(n):
            order.append(n)

    threads = [threading.Thread(target=step, args=(n,)) for n in (3, 1, 2, 0)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert order == [0, 1, 2, 3]


def test_sequencer_times_out_instead_of_deadlocking():
    seq = Sequencer(timeout=0.05)
    with pytest.raises(TimeoutError, match="step 1"):
        with seq(1):
            pass


def test_sequencer_step_used_twice_or_after_a_failure():
    seq = Sequencer(timeout=0.5)
    with pytest.raises(ZeroDivisionError):
        with seq(0):
            1 / 0
    with pytest.raises(RuntimeError, match="step 0 failed"):
        with seq(1):
            pass
    with pytest.raises(RuntimeError, match="already used"):
        with seq(0):
            pass


def test_event_log_spans_and_overlap():
    log = EventLog()
    log.record("x")
    with log.span("a"):
        with log.span("b"):
            pass
    with log.span("c"):
        pass
    assert log.entries == ["x", "a:start", "b:start", "b:end", "a:end", "c:start", "c:end"]
    assert log.overlapped("a", "b") and not log.overlapped("a", "c")
    assert not log.overlapped("a", "missing")


def test_event_log_middleware_is_declared():
    log = EventLog()
    mw = log.middleware("collect", reads=("env_step",), writes=("trajectories",))
    c = contract_of(mw)
    assert c.reads == {"env_step"} and c.writes == {"trajectories"}
    mw(None)
    assert log.entries == ["collect:start", "collect:end"] and mw.__name__ == "collect"
