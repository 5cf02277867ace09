"""Middleware shapes, the onion order, error notes, wrap/forward/backward, serial/parallel."""
import functools
import threading
import traceback

import pytest

from rlpipe.engine import PipelineError, Task, contract, contract_of


def onion(log, name):
    def mw(ctx):
        log.append(f"{name}>")
        yield
        log.append(f"<{name}")
    mw.__qualname__ = name
    return mw


def run_chain(*fns, max_step=1, async_mode=False):
    t = Task()
    with t.start(async_mode=async_mode):
        for fn in fns:
            t.use(fn)
        t.run(max_step=max_step)
    return t


def test_three_shapes_and_post_yield_order():
    log = []

    class Obj:
        def __call__(self, ctx):
            log.append("obj")

    run_chain(onion(log, "a"), lambda ctx: log.append("f"), onion(log, "b"), Obj(), max_step=2)
    assert log == ["a>", "f", "b>", "obj", "<b", "<a"] * 2


def test_object_whose_call_is_a_generator():
    log = []

    class Gen:
        def __call__(self, ctx):
            log.append("pre")
            yield
            log.append("post")

    run_chain(Gen(), lambda ctx: log.append("mid"))
    assert log == ["pre", "mid", "post"]


def test_generator_that_returns_before_yield_has_no_post_part():
    log = []

    def early(ctx):
        log.append("early")
        return
        yield  # noqa: unreachable - makes this a generator

    run_chain(early, lambda ctx: log.append("next"))
    assert log == ["early", "next"]


def test_error_keeps_type_and_traceback_and_names_the_middleware():
    def fine(ctx):
        pass

    def broken_learner(ctx):
        raise KeyError("missing")

    with pytest.raises(KeyError) as info:
        run_chain(fine, broken_learner)
    notes = info.value.__notes__
    assert any(".broken_learner'" in n and "position 1 of 2" in n for n in notes)
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "broken_learner" in frames


def test_error_after_yield_is_named_and_later_posts_do_not_run():
    log = []

    def bad_post(ctx):
        yield
        raise ValueError("post failed")

    with pytest.raises(ValueError) as info:
        run_chain(onion(log, "outer"), bad_post)
    assert log == ["outer>"]
    assert any(".bad_post'" in n and "after its yield" in n for n in info.value.__notes__)


def test_error_closes_suspended_generators_without_running_post_code():
    log = []

    def guarded(ctx):
        try:
            yield
            log.append("post")
        finally:
            log.append("finally")

    def boom(ctx):
        raise RuntimeError("x")

    with pytest.raises(RuntimeError):
        run_chain(guarded, boom)
    assert log == ["finally"]


def test_error_after_yield_closes_the_outer_generators_without_their_post_code():
    log = []

    def guarded(ctx):
        try:
            yield
            log.append("post")
        finally:
            log.append("finally")

    def bad_post(ctx):
        yield
        raise ValueError("post failed")

    with pytest.raises(ValueError):
        run_chain(guarded, bad_post)
    assert log == ["finally"]


def test_forward_in_post_yield_code_without_backward_runs_the_child_right_after():
    log = []
    t = Task()

    def late_parent(ctx):
        yield
        t.forward(onion(log, "child"))
        log.append("parent<")

    with t.start():
        t.use(onion(log, "outer")).use(late_parent).use(onion(log, "inner"))
        t.run(max_step=2)
    assert log == ["outer>", "inner>", "<inner", "child>", "parent<", "<child", "<outer"] * 2


def test_generators_that_forward_nothing_are_resumed_in_place():
    # the common shape costs no call of the general resume (a per-thread list swap each)
    t = Task()
    resumed = []
    general = t._flow.resume
    t._flow.resume = lambda item: (resumed.append(item.name), general(item))
    log = []
    with t.start():
        t.use(onion(log, "a")).use(onion(log, "b"))
        t.use(lambda ctx: t.forward(onion(log, "child")))
        t.run(max_step=1)
    assert log == ["a>", "b>", "child>", "<child", "<b", "<a"]
    # only the middleware that forwarded, and what it forwarded, take the general path
    assert len(resumed) == 2 and "lambda" in resumed[0] and resumed[1] == "child"


def test_two_yields_are_an_error():
    def twice(ctx):
        yield
        yield

    with pytest.raises(RuntimeError, match="yielded more than once"):
        run_chain(twice)


def test_wrap_runs_pre_part_and_returns_the_post_part():
    log = []
    t = Task()

    def outer(ctx):
        back = t.wrap(onion(log, "inner"))(ctx)
        log.append("between")
        back()
        noop = t.wrap(lambda c: log.append("plain"))(ctx)
        assert noop() is None

    with t.start():
        t.use(outer)
        t.run(max_step=1)
    assert log == ["inner>", "between", "<inner", "plain"]


def test_wrap_keeps_the_contract():
    t = Task()
    fn = contract(reads=("obs",), writes=("action",))(lambda ctx: None)
    assert contract_of(t.wrap(fn)) == contract_of(fn)


def test_forward_and_backward_inside_a_composite():
    log = []
    t = Task()

    def composite(ctx):
        t.forward(onion(log, "a"), ctx)
        t.forward(onion(log, "b"))
        log.append("composite>")
        yield
        log.append("<composite-before")
        t.backward()
        log.append("<composite-after")

    run = lambda ctx: log.append("later")  # noqa: E731
    with t.start():
        t.use(composite).use(run)
        t.run(max_step=1)
    assert log == ["a>", "b>", "composite>", "later", "<composite-before", "<b", "<a",
                   "<composite-after"]


def test_forwarded_parts_left_by_a_plain_function_run_in_the_backward_phase():
    log = []
    t = Task()

    def plain(ctx):
        t.forward(onion(log, "a"))

    with t.start():
        t.use(plain).use(lambda ctx: log.append("later"))
        t.run(max_step=1)
    assert log == ["a>", "later", "<a"]


def test_forward_returns_the_generator_or_none():
    t = Task()
    with t.start():
        assert t.forward(lambda ctx: None) is None
        gen = t.forward(onion([], "g"))
        assert gen is not None
        t.backward()


def test_serial_runs_in_order_and_unwinds_in_reverse_with_combined_contract():
    log = []
    t = Task()
    a = contract(writes=("obs",))(onion(log, "a"))
    b = contract(reads=("obs", "env_step"), writes=("action",))(onion(log, "b"))
    s = t.serial(a, b)
    c = contract_of(s)
    assert c.reads == {"env_step"} and c.writes == {"obs", "action"}
    assert contract_of(t.serial(a, lambda ctx: None)) is None
    with t.start():
        t.use(s).use(lambda ctx: log.append("later"))
        t.run(max_step=1)
    assert log == ["a>", "b>", "later", "<b", "<a"]


def test_parallel_runs_children_concurrently_then_post_parts_in_reverse():
    log = []
    barrier = threading.Barrier(3, timeout=5)

    def child(name):
        def mw(ctx):
            barrier.wait()  # all three must be running at once
            log.append(f"{name}>")
            yield
            log.append(f"<{name}")
        mw.__qualname__ = name
        return contract(writes=(name,))(mw)

    t = Task()
    p = t.parallel(child("obs"), child("action"), child("train_data"))
    assert contract_of(p).writes == {"obs", "action", "train_data"}
    before = threading.active_count()
    with t.start():
        t.use(p)
        t.run(max_step=1)
    assert sorted(log[:3]) == ["action>", "obs>", "train_data>"]
    assert log[3:] == ["<train_data", "<action", "<obs"]
    assert threading.active_count() == before


def test_parallel_refuses_conflicting_children():
    w = contract(writes=("obs",))(lambda ctx: None)
    r = contract(reads=("obs",))(lambda ctx: None)
    with pytest.raises(PipelineError, match="obs"):
        Task().parallel(w, r)


def test_parallel_reports_the_failing_child():
    def fails(ctx):
        raise ZeroDivisionError

    t = Task()
    with pytest.raises(ZeroDivisionError) as info:
        with t.start():
            t.use(t.parallel(lambda ctx: None, fails))
            t.run(max_step=1)
    assert any(".fails'" in n and "parallel" in n for n in info.value.__notes__)


def test_serial_and_parallel_close_their_children():
    class C:
        closed = 0

        def __call__(self, ctx):
            pass

        def close(self):
            self.closed += 1

    a, b = C(), C()
    t = Task()
    with t.start():
        t.use(t.serial(a, t.parallel(b)))
        t.run(max_step=1)
    assert a.closed == 1 and b.closed == 1


def test_names_used_in_messages():
    from rlpipe.engine._names import middleware_name

    class Learner:
        def __call__(self, ctx):
            pass

    assert middleware_name(Learner()) == "Learner"
    assert middleware_name(_factory()) == "_factory._push"
    assert middleware_name(functools.partial(_factory)) == "_factory"
    assert middleware_name(Learner) == "Learner"
    assert middleware_name(Task().serial(_factory(), Learner())) == "serial(_factory._push, Learner)"


def _factory():
    def _push(ctx):
        pass
    return _push
