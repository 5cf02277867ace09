"""start/use/run/stop, finish, renew and close()."""
import threading

import pytest

from rlpipe.contexts import OfflineRLContext, OnlineRLContext
from rlpipe.engine import PipelineError, Task, task


def test_start_defaults_to_online_context_and_returns_the_task():
    t = Task()
    with t.start() as started:
        assert started is t
        assert type(t.ctx) is OnlineRLContext and not t.async_mode
    t2 = Task()
    ctx = OfflineRLContext()
    with t2.start(ctx=ctx):
        assert t2.ctx is ctx


def test_use_returns_task_and_run_counts_iterations_and_renews():
    t = Task()
    steps = []
    with t.start():
        assert t.use(lambda ctx: steps.append(ctx.total_step)) is t
        t.run(max_step=4)
        assert steps == [0, 1, 2, 3]
        assert t.ctx.total_step == 3


def test_run_again_starts_from_a_renewed_context():
    t = Task()
    steps = []
    with t.start():
        t.use(lambda ctx: steps.append(ctx.total_step))
        t.run(max_step=2)
        t.run(max_step=2)
    assert steps == [0, 1, 2, 3]


def test_finish_is_true_on_the_last_iteration_under_max_step():
    t = Task()
    seen = []
    with t.start():
        t.use(lambda ctx: seen.append(t.finish))
        t.run(max_step=3)
    assert seen == [False, False, True]


def test_finish_set_by_a_middleware_ends_after_the_current_iteration():
    t = Task()
    calls = []

    def stopper(ctx):
        calls.append("stopper")
        if ctx.total_step == 2:
            t.finish = True

    with t.start():
        t.use(stopper).use(lambda ctx: calls.append("after"))
        t.run()
    assert calls == ["stopper", "after"] * 3


def test_end_run_from_outside_the_chain_ends_after_the_iteration_and_records_why(caplog):
    t = Task()
    calls = []

    def listener(ctx):  # code outside the chain, as a signal handler or tune's pruner is
        if ctx.total_step == 1:
            t.end_run("stopped by the test")
            t.end_run("a later reason")  # the first reason asked for is the one kept

    def mw(ctx):
        calls.append(ctx.total_step)
        t.emit("tick", ctx)

    with t.start():
        t.on("tick", listener)
        t.use(mw).use(lambda ctx: calls.append(("after", t.finish)))
        with caplog.at_level("INFO", logger="rlpipe.engine"):
            t.run()
        assert calls == [0, ("after", False), 1, ("after", True)]
        assert t.finish and t.finish_reason == "stopped by the test"
        assert "the run ended after iteration 1: stopped by the test" in caplog.text
        t.run(max_step=1)  # a new run starts without the old reason
        assert t.finish_reason is None


def test_end_run_needs_a_reason_and_finish_false_clears_it():
    t = Task()
    with pytest.raises(ValueError, match="say why"):
        t.end_run("")
    t.end_run("x")
    assert t.finish and t.finish_reason == "x"
    t.finish = False
    assert not t.finish and t.finish_reason is None


def test_finish_event_is_emitted_when_the_run_ends():
    t = Task()
    ended = []
    with t.start():
        t.on("finish", lambda ctx: ended.append(ctx.total_step))
        t.use(lambda ctx: None)
        t.run(max_step=2)
    assert ended == [1]


def test_renew_replaces_ctx_and_keeps_kept_fields():
    t = Task()
    with t.start():
        t.ctx.env_step = 5
        t.ctx.obs = "x"
        old = t.ctx
        assert t.renew() is t
        assert t.ctx is not old and t.ctx.env_step == 5 and t.ctx.obs is None
        assert t.ctx.total_step == 1


def test_keep_survives_many_iterations_of_a_run():
    t = Task()

    def count(ctx):
        ctx.eval_value = (ctx.eval_value if ctx.eval_value > -1 else 0) + 1

    with t.start():
        t.ctx.keep("eval_value")
        t.use(count)
        t.run(max_step=100)
        assert t.ctx.eval_value == 100


class Closable:
    def __init__(self, fail=False):
        self.closed = 0
        self.fail = fail

    def __call__(self, ctx):
        if self.fail:
            raise ValueError("boom")

    def close(self):
        self.closed += 1


def test_close_called_exactly_once_after_an_error():
    t = Task()
    a, b = Closable(), Closable(fail=True)
    with pytest.raises(ValueError, match="boom"):
        with t.start():
            t.use(a).use(b).use(a)  # the same object twice is closed once
            t.run(max_step=5)
    assert a.closed == 1 and b.closed == 1
    t.stop()  # a second stop closes nothing again
    assert a.closed == 1 and b.closed == 1


def test_close_error_does_not_hide_the_run_error():
    class BadClose(Closable):
        def close(self):
            raise OSError("close failed")

    t = Task()
    with pytest.raises(ValueError) as info:
        with t.start():
            t.use(Closable(fail=True)).use(BadClose())
            t.run(max_step=1)
    assert any("close failed" in note for note in info.value.__notes__)


def test_close_error_after_a_clean_run_is_raised_after_closing_the_others():
    class BadClose(Closable):
        def close(self):
            raise OSError("close failed")

    good = Closable()
    t = Task()
    with pytest.raises(OSError) as info:
        with t.start():
            t.use(good).use(BadClose())
            t.run(max_step=1)
    assert good.closed == 1
    assert any("BadClose" in note for note in info.value.__notes__)


def test_stop_clears_chain_and_listeners_so_the_global_task_can_start_again():
    heard = []
    for _ in range(2):
        with task.start():
            task.on("ping", heard.append)
            task.use(lambda ctx: task.emit("ping", ctx.total_step))
            task.run(max_step=1)
        task.emit("ping", "after stop")
    assert heard == [0, 0]
    assert task.profile().middleware[0].count == 1


def test_misuse_is_reported():
    t = Task()
    with pytest.raises(RuntimeError, match="start"):
        t.run()
    with pytest.raises(RuntimeError, match="start"):
        t.ctx
    with t.start():
        with pytest.raises(RuntimeError, match="already started"):
            t.start()
        with pytest.raises(PipelineError, match="empty"):
            t.run()
        t.use(lambda ctx: None)
        with pytest.raises(ValueError, match="max_step"):
            t.run(max_step=0)
    with pytest.raises(TypeError, match="Context"):
        t.start(ctx={"a": 1})
    with pytest.raises(ValueError, match="async_mode"):
        t.start(n_workers=2)
    with pytest.raises(TypeError, match="callable"):
        t.use(42)


def test_stop_from_inside_the_run_is_refused():
    t = Task()
    with pytest.raises(RuntimeError, match="finish"):
        with t.start():
            t.use(lambda ctx: t.stop())
            t.run(max_step=1)


def test_sync_mode_starts_no_thread():
    before = threading.active_count()
    t = Task()
    with t.start():
        t.use(lambda ctx: None)
        t.run(max_step=3)
        assert threading.active_count() == before
