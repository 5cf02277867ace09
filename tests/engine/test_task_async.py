"""Async mode: the dataflow graph from the contracts, overlap, ordering and failures."""
import threading
import time
import traceback

import pytest

from rlpipe.engine import Task, contract
from rlpipe.engine.testing import EventLog, Sequencer


def run_async(*fns, max_step=1, n_workers=None):
    t = Task()
    with t.start(async_mode=True, n_workers=n_workers):
        for fn in fns:
            t.use(fn)
        t.run(max_step=max_step)
    return t


def test_independent_middleware_overlap():
    log = EventLog()
    started = time.perf_counter()
    t = run_async(log.middleware("collect", writes=("trajectories",), sleep=0.2),
                  log.middleware("learn", reads=("train_iter",), writes=("train_output",), sleep=0.2))
    elapsed = time.perf_counter() - started
    assert elapsed < 0.33
    assert log.overlapped("collect", "learn")
    assert t.profile().overlap > 1.5


def test_dependent_middleware_never_overlap():
    log = EventLog()
    run_async(log.middleware("collect", writes=("trajectories",), sleep=0.05),
              log.middleware("push", reads=("trajectories",), sleep=0.05),
              log.middleware("w1", writes=("train_output",), sleep=0.05),
              log.middleware("w2", writes=("train_output",), sleep=0.05),
              log.middleware("r", reads=("env_step",), sleep=0.05),
              log.middleware("w", writes=("env_step",), sleep=0.05),
              max_step=2)
    assert not log.overlapped("collect", "push")  # write -> read
    assert not log.overlapped("w1", "w2")  # write -> write
    assert not log.overlapped("r", "w")  # read -> write
    assert log.overlapped("collect", "w1")  # independent


def test_undeclared_middleware_is_a_barrier_in_async_mode():
    log = EventLog()

    def barrier(ctx):
        with log.span("barrier"):
            time.sleep(0.05)

    run_async(log.middleware("a", writes=("obs",), sleep=0.05), barrier,
              log.middleware("b", writes=("action",), sleep=0.05))
    assert not log.overlapped("a", "barrier") and not log.overlapped("barrier", "b")


def test_iterations_are_separated_by_a_barrier():
    log = EventLog()
    seen = []

    @contract(writes=("obs",))
    def fast(ctx):
        seen.append(("fast", ctx.total_step))

    @contract(writes=("action",))
    def slow(ctx):
        time.sleep(0.02)
        seen.append(("slow", ctx.total_step))

    run_async(fast, slow, max_step=3)
    steps = [step for _, step in seen]
    assert steps == sorted(steps) and len(seen) == 6
    assert log.entries == []


def test_sequencer_forces_an_order_between_independent_middleware():
    seq = Sequencer()
    log = EventLog()
    # "second" is earlier in the chain but must wait for "first" (step 0)
    run_async(log.middleware("second", writes=("obs",), step=(seq, 1)),
              log.middleware("first", writes=("action",), step=(seq, 0)))
    assert log.entries == ["first:start", "first:end", "second:start", "second:end"]


def test_post_yield_parts_run_after_the_whole_graph_in_reverse():
    log = []

    def gen(name, writes):
        @contract(writes=writes)
        def mw(ctx):
            log.append(f"{name}>")
            yield
            log.append(f"<{name}")
        return mw

    @contract(reads=("obs", "action"))
    def last(ctx):
        time.sleep(0.01)
        log.append("last")

    run_async(gen("a", ("obs",)), gen("b", ("action",)), last)
    assert sorted(log[:2]) == ["a>", "b>"]
    assert log[2:] == ["last", "<b", "<a"]


def test_failure_in_async_middleware_keeps_type_note_and_leaves_no_thread():
    before = threading.active_count()
    calls = []

    @contract(writes=("obs",))
    def slow_neighbour(ctx):
        time.sleep(0.1)
        calls.append("neighbour done")

    @contract(writes=("action",))
    def exploding(ctx):
        raise ArithmeticError("exploded")

    @contract(reads=("action",))
    def dependent(ctx):
        calls.append("dependent ran")

    with pytest.raises(ArithmeticError, match="exploded") as info:
        run_async(slow_neighbour, exploding, dependent, max_step=3)
    notes = info.value.__notes__
    assert any(".exploding'" in n and "worker thread" in n for n in notes)
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "exploding" in frames
    assert calls == ["neighbour done"]  # the running one was waited for; nothing new started
    assert threading.active_count() == before


def test_every_failure_of_an_iteration_is_reported():
    barrier = threading.Barrier(2, timeout=5)

    @contract(writes=("obs",))
    def fail_a(ctx):
        barrier.wait()
        raise ValueError("a")

    @contract(writes=("action",))
    def fail_b(ctx):
        barrier.wait()
        raise KeyError("b")

    with pytest.raises((ValueError, KeyError)) as info:
        run_async(fail_a, fail_b)
    assert any("also failed" in n for n in info.value.__notes__)


def test_finish_and_close_in_async_mode():
    class Saver:
        closed = 0

        def __init__(self):
            self.finish_seen = []

        def __call__(self, ctx):
            self.finish_seen.append(t.finish)

        def close(self):
            self.closed += 1

    saver = Saver()
    t = Task()
    with t.start(async_mode=True, n_workers=2):
        t.use(saver)
        t.run(max_step=3)
    assert saver.finish_seen == [False, False, True] and saver.closed == 1


def test_composite_middleware_work_in_worker_threads():
    log = []
    t = Task()

    def onion(name):
        def mw(ctx):
            log.append(f"{name}>")
            yield
            log.append(f"<{name}")
        return mw

    @contract(writes=("obs",))
    def composite(ctx):
        t.forward(onion("inner"), ctx)
        yield
        t.backward()

    with t.start(async_mode=True):
        t.use(composite)
        t.use(t.serial(contract(writes=("action",))(onion("s"))))
        t.run(max_step=2)
    assert log.count("inner>") == 2 and log.count("<inner") == 2 and log.count("<s") == 2


def test_clean_async_run_leaves_no_thread_after_stop():
    before = threading.active_count()
    t = Task()
    with t.start(async_mode=True, n_workers=3):
        t.use(contract(writes=("obs",))(lambda ctx: time.sleep(0.01)))
        t.use(contract(writes=("action",))(lambda ctx: time.sleep(0.01)))
        t.run(max_step=3)
        assert threading.active_count() > before  # the pool's workers, started by start()/run()
    assert threading.active_count() == before


def test_one_worker_runs_independent_middleware_one_at_a_time():
    log = EventLog()
    run_async(log.middleware("a", writes=("obs",), sleep=0.02),
              log.middleware("b", writes=("action",), sleep=0.02), n_workers=1, max_step=2)
    assert not log.overlapped("a", "b") and log.entries.count("a:end") == 2


def test_an_order_that_contradicts_the_contracts_times_out_loudly():
    seq = Sequencer(timeout=0.2)
    log = EventLog()
    with pytest.raises(TimeoutError) as info:
        # the reader must wait for the writer, but is forced to go first
        run_async(log.middleware("writer", writes=("obs",), step=(seq, 1)),
                  log.middleware("reader", reads=("obs",), step=(seq, 0)))
    assert any(".writer" in n or "'writer'" in n for n in info.value.__notes__)
