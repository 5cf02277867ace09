"""termination_checker: each limit ends the run, the reason is logged, bad limits are refused."""
import logging
import time

import pytest

from rlpipe.contexts import OfflineRLContext, OnlineRLContext
from rlpipe.engine import _current, contract_of
from rlpipe.middleware.termination import termination_checker


class FakeTask:
    finish = False


@pytest.fixture
def running():
    task = FakeTask()
    _current.set_running(task)
    yield task
    _current.set_running(None)


def _ctx(env_step=0, train_iter=0):
    ctx = OnlineRLContext()
    ctx.env_step = env_step
    ctx.train_iter = train_iter
    return ctx


def test_env_step_limit(running, caplog):
    check = termination_checker(max_env_step=100)
    check(_ctx(env_step=99))
    assert running.finish is False
    with caplog.at_level(logging.INFO, logger="rlpipe.middleware.termination"):
        check(_ctx(env_step=100))
    assert running.finish is True
    assert "max_env_step=100" in caplog.text and "env_step=100" in caplog.text


def test_train_iter_limit(running, caplog):
    check = termination_checker(max_train_iter=10, max_env_step=10**9)
    check(_ctx(train_iter=9))
    assert running.finish is False
    with caplog.at_level(logging.INFO, logger="rlpipe.middleware.termination"):
        check(_ctx(train_iter=12))
    assert running.finish is True
    assert "max_train_iter=10" in caplog.text and "max_env_step" not in caplog.text


def test_wall_time_limit(running, caplog):
    check = termination_checker(max_wall_time=0.05)
    check(_ctx())
    assert running.finish is False
    time.sleep(0.06)
    with caplog.at_level(logging.INFO, logger="rlpipe.middleware.termination"):
        check(_ctx())
    assert running.finish is True
    assert "max_wall_time" in caplog.text


def test_reason_logged_once(running, caplog):
    check = termination_checker(max_env_step=1)
    with caplog.at_level(logging.INFO, logger="rlpipe.middleware.termination"):
        check(_ctx(env_step=5))
        check(_ctx(env_step=6))
    assert caplog.text.count("ends the run") == 1


def test_needs_a_limit():
    with pytest.raises(ValueError, match="at least one limit"):
        termination_checker()


@pytest.mark.parametrize("kwargs", [{"max_env_step": 0}, {"max_train_iter": -3},
                                    {"max_wall_time": "1h"}, {"max_env_step": True}])
def test_bad_limit(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        termination_checker(**kwargs)


def test_contract_reads_only_the_limited_counters():
    assert contract_of(termination_checker(max_env_step=5)).reads == {"env_step"}
    assert contract_of(termination_checker(max_train_iter=5)).reads == {"train_iter"}
    assert contract_of(termination_checker(max_wall_time=5)).reads == frozenset()
    assert contract_of(termination_checker(max_wall_time=5)).writes == frozenset()


def test_missing_counter_is_a_clear_error(running):
    with pytest.raises(AttributeError, match="env_step"):
        termination_checker(max_env_step=5)(OfflineRLContext())


@pytest.mark.parametrize("async_mode", [False, True])
def test_ends_a_task_run(async_mode):
    from rlpipe.engine import Task, contract

    @contract(reads=("env_step",), writes=("env_step",))
    def collect(ctx):
        ctx.env_step += 10

    with Task().start(async_mode=async_mode, ctx=OnlineRLContext()) as task:
        task.use(collect)
        task.use(termination_checker(max_env_step=50))
        task.run(max_step=1000)
        assert task.ctx.env_step == 50 and task.finish
