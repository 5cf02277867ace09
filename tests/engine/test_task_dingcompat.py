"""DI-engine's current Task API beside the guide's: use(fn, lock=...), use_wrapper on middleware
already added, start(n_async_workers=), task.running, Role.FETCHER, has_role with no role."""
import threading

import pytest

from rlpipe.engine import Role, Task, contract
from rlpipe.engine.testing import EventLog


def independent(log, sleep=0.1):
    return (log.middleware("collect", writes=("trajectories",), sleep=sleep),
            log.middleware("learn", reads=("train_iter",), writes=("train_output",), sleep=sleep))


@pytest.mark.parametrize("lock", [True, "object"])
def test_middleware_holding_one_lock_never_overlap_in_async_mode(lock):
    lock = threading.Lock() if lock == "object" else lock
    log = EventLog()
    collect, learn = independent(log)
    t = Task()
    with t.start(async_mode=True, n_async_workers=2):
        t.use(collect, lock=lock)
        t.use(learn, lock=lock)
        t.run(max_step=3)
    assert not log.overlapped("collect", "learn")
    assert t.profile().middleware[0].count == 3


def test_without_a_shared_lock_the_same_middleware_overlap():
    log = EventLog()
    collect, learn = independent(log)
    t = Task()
    with t.start(async_mode=True, n_async_workers=2):
        t.use(collect, lock=True)
        t.use(learn, lock=threading.Lock())  # another lock
        t.run(max_step=1)
    assert log.overlapped("collect", "learn")


def test_a_locked_generator_keeps_its_yield_contract_and_close():
    calls = []

    class Saver:
        def __call__(self, ctx):
            calls.append("pre")
            yield
            calls.append("post")

        def close(self):
            calls.append("close")

    contract(reads=("train_iter",))(Saver)
    t = Task()
    with t.start():
        t.use(Saver(), lock=True)
        t.use(contract(writes=("obs",))(lambda ctx: calls.append("next")), lock=True)
        t.run(max_step=1)
        assert t.profile().middleware[0].name == "Saver"
    assert calls == ["pre", "next", "post", "close"]
    with pytest.raises(TypeError, match="lock must be True"):
        Task().use(lambda ctx: None, lock="yes")


def test_use_wrapper_wraps_middleware_already_added_but_not_other_roles_noops():
    seen = []

    def tracing(fn):
        def traced(ctx):
            seen.append("wrapped")
            return fn(ctx)
        return traced

    t = Task().add_role(Role.LEARNER)
    with t.start():
        t.use(contract(writes=("obs",))(lambda ctx: seen.append("a")))
        t.use(contract(role=Role.COLLECTOR)(lambda ctx: seen.append("collector")))  # void here
        t.use_wrapper(tracing)
        t.run(max_step=1)
    assert seen == ["wrapped", "a"]


def test_n_async_workers_sizes_the_pool_and_is_unused_in_sync_mode():
    t = Task()
    with t.start(async_mode=True, n_async_workers=1):
        assert t._executor._max_workers == 1
    with t.start(n_async_workers=3):  # DI-engine passes it in sync mode too
        assert not t.async_mode
    for bad in (0, True, 1.5):
        with pytest.raises(ValueError, match="n_async_workers"):
            t.start(async_mode=True, n_async_workers=bad)
    with pytest.raises(ValueError, match="two names"):
        t.start(async_mode=True, n_workers=2, n_async_workers=3)
    assert not t.running


def test_running_is_true_from_start_to_stop():
    t = Task()
    assert t.running is False
    states = []
    with t.start():
        states.append(t.running)
        t.use(lambda ctx: states.append(t.running))
        t.run(max_step=1)
        states.append(t.running)
    assert states == [True, True, True] and t.running is False


def test_has_role_is_true_for_every_role_until_one_is_added():
    t = Task()
    assert all(t.has_role(r) for r in Role) and t.has_role("fetcher")
    t.add_role(Role.FETCHER)
    assert t.has_role(Role.FETCHER) and t.has_role(t.role.FETCHER)
    assert not t.has_role(Role.LEARNER) and not t.serves(Role.COLLECTOR)
    with pytest.raises(ValueError, match="Role.FETCHER"):
        t.has_role("fetchr")


def test_fetcher_role_middleware_is_void_in_a_learner_process():
    ran = []
    fetch = contract(writes=("train_data",), role=Role.FETCHER)(lambda ctx: ran.append("fetch"))
    for roles, expected in (((), ["fetch"]), ((Role.LEARNER,), [])):
        ran.clear()
        t = Task()
        for r in roles:
            t.add_role(r)
        with t.start():
            t.use(fetch)
            t.run(max_step=1)
        assert ran == expected


def test_wrap_with_lock_holds_it_in_each_part():
    lock = threading.Lock()
    held = []

    def mw(ctx):
        held.append(lock.locked())
        yield
        held.append(lock.locked())

    t = Task()
    with t.start():
        back = t.wrap(mw, lock=lock)(t.ctx)
        held.append(lock.locked())
        back()
    assert held == [True, False, True]
