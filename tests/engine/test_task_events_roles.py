"""Events, roles and void(), use_wrapper."""
import threading

import pytest

from rlpipe.engine import Role, Task, contract, contract_of


def test_on_once_off_emit():
    t = Task()
    heard = []

    def always(*args, **kwargs):
        heard.append(("always", args, kwargs))

    t.on("episode_end", always)
    t.once("episode_end", lambda *a, **k: heard.append(("once", a, k)))
    t.emit("episode_end", {"return": 1.0}, env_id=0)
    t.emit("episode_end", 2)
    t.off("episode_end", always)
    t.emit("episode_end", 3)
    t.emit("nobody_listens")
    assert heard == [("always", ({"return": 1.0},), {"env_id": 0}),
                     ("once", ({"return": 1.0},), {"env_id": 0}),
                     ("always", (2,), {})]


def test_off_without_handler_removes_all():
    t = Task()
    heard = []
    t.on("eval_end", heard.append)
    t.on("eval_end", heard.append)
    t.off("eval_end")
    t.emit("eval_end", 1)
    assert heard == []


def test_handler_error_propagates_with_a_note():
    t = Task()

    def bad(value):
        raise ValueError(value)

    t.on("eval_end", bad)
    with pytest.raises(ValueError) as info:
        t.emit("eval_end", 3)
    assert any("'eval_end'" in n and "bad" in n for n in info.value.__notes__)


def test_events_are_thread_safe_and_once_fires_once():
    t = Task()
    counts = {"on": 0, "once": 0}
    lock = threading.Lock()

    def on(_):
        with lock:
            counts["on"] += 1

    def once(_):
        with lock:
            counts["once"] += 1

    t.on("tick", on)
    t.once("tick", once)

    def emitter():
        for i in range(200):
            t.emit("tick", i)

    threads = [threading.Thread(target=emitter) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert counts == {"on": 800, "once": 1}


def test_middleware_emit_events_during_a_run():
    t = Task()
    ends = []
    with t.start(async_mode=True):
        t.on("episode_end", ends.append)
        t.use(contract(writes=("obs",), emits=("episode_end",))(
            lambda ctx: t.emit("episode_end", ctx.total_step)))
        t.run(max_step=3)
    assert ends == [0, 1, 2]


def test_roles_and_serves():
    t = Task()
    assert t.roles == frozenset()
    assert t.serves(Role.LEARNER) and t.serves(t.role.COLLECTOR)
    t.add_role(t.role.LEARNER).add_role("evaluator")
    assert t.roles == {Role.LEARNER, Role.EVALUATOR}
    assert t.has_role(Role.LEARNER) and not t.has_role(Role.COLLECTOR)
    assert t.serves("learner") and not t.serves(Role.COLLECTOR)
    with pytest.raises(ValueError, match="LEARNER"):
        t.add_role("trainer")


def test_void_is_a_no_op_with_an_empty_contract():
    t = Task()
    t.add_role(Role.LEARNER)

    def collector_middleware():
        if not t.serves(Role.COLLECTOR):
            return t.void()
        raise AssertionError("a learner process must not build the collector")

    void = collector_middleware()
    c = contract_of(void)
    assert c is not None and not (c.reads or c.writes or c.reads_after)
    with t.start():
        t.use(void)
        t.run(max_step=2)
    assert t.profile().middleware[0].name == "void"


def test_use_wrapper_wraps_earlier_and_later_middleware_and_keeps_contracts():
    t = Task()
    calls = []

    def tracing(fn):
        def traced(ctx):
            calls.append("before")
            return fn(ctx)
        return traced

    @contract(writes=("obs",))
    def first(ctx):
        calls.append("first")

    @contract(reads=("obs",))
    def second(ctx):
        calls.append("second")
        yield
        calls.append("second-post")

    with t.start():
        t.use(first)
        assert t.use_wrapper(tracing) is t
        t.use(second)
        t.run(max_step=1)
        names = [m.name for m in t.profile().middleware]
    # as in DI-engine, the wrapper applies to middleware already added, too
    assert calls == ["before", "first", "before", "second", "second-post"]
    assert names[1].endswith("second")


def test_use_wrapper_on_an_object_keeps_its_close_and_contract():
    class Learner:
        closed = 0

        def __call__(self, ctx):
            pass

        def close(self):
            self.closed += 1

    contract(writes=("train_output",))(Learner)
    learner = Learner()
    t = Task()
    with t.start():
        t.use_wrapper(lambda fn: (lambda ctx: fn(ctx)))
        t.use(learner)
        t.run(max_step=1)
        assert t.profile().middleware[0].name == "Learner"
    assert learner.closed == 1


def test_stop_clears_wrappers():
    t = Task()
    wrapped = []
    with t.start():
        t.use_wrapper(lambda fn: wrapped.append(fn) or fn)
        t.use(lambda ctx: None)
        t.run(max_step=1)
    with t.start():
        t.use(lambda ctx: None)
        t.run(max_step=1)
    assert len(wrapped) == 1
