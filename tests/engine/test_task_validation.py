"""The chain is checked against the contracts before any middleware runs."""
import dataclasses

import pytest

from rlpipe.contexts import Context, OnlineRLContext
from rlpipe.engine import PipelineError, Task, contract


def declared(name, reads=(), writes=(), reads_after=(), log=None):
    @contract(reads=reads, writes=writes, reads_after=reads_after)
    def mw(ctx):
        if log is not None:
            log.append(name)
    mw.__qualname__ = mw.__name__ = name
    return mw


def check(*fns, ctx=None):
    """Run one iteration; return the PipelineError (asserting that nothing ran)."""
    log = []
    t = Task()
    with t.start(ctx=ctx):
        for fn in fns:
            t.use(fn)
        t.use(contract()(lambda c: log.append("ran")))
        with pytest.raises(PipelineError) as info:
            t.run(max_step=1)
    assert log == []
    return info.value


def test_read_before_write_names_reader_writer_and_fixes():
    err = check(declared("learner", reads=("train_data",), writes=("train_output",)),
                declared("fetcher", writes=("train_data",)))
    message = str(err)
    assert "'learner' (position 0)" in message and "ctx.train_data" in message
    assert "'fetcher' (position 1)" in message and "move 'fetcher' before 'learner'" in message
    assert "ctx.keep('train_data')" in message and "subclass OnlineRLContext" in message
    assert len(err.problems) == 1


def test_read_that_nothing_writes():
    err = check(declared("learner", reads=("train_data",)))
    assert "No middleware of the chain writes it" in str(err)


def test_no_middleware_runs_when_the_chain_is_invalid():
    log = []
    err = check(declared("first", log=log), declared("learner", reads=("obs",)))
    assert log == [] and "ctx.obs" in str(err)


def test_satisfied_by_earlier_write_kept_field_or_default():
    log = []
    t = Task()
    with t.start():
        t.ctx.keep("obs")
        t.use(declared("a", reads=("env_step", "info_for_logging", "eval_value", "obs"), log=log))
        t.use(declared("b", writes=("train_data",), log=log))
        t.use(declared("c", reads=("train_data",), log=log))
        t.run(max_step=1)
    assert log == ["a", "b", "c"]


def test_unknown_field_names_the_class_and_close_matches():
    err = check(declared("collector", writes=("trajectorys",)))
    message = str(err)
    assert "ctx.trajectorys" in message and "OnlineRLContext declares no field" in message
    assert "'trajectories'" in message and "subclass OnlineRLContext" in message


def test_unknown_read_and_reads_after_are_reported_too():
    err = check(declared("x", reads=("env_stepz",), reads_after=("train_outptu",)))
    assert len(err.problems) == 2
    assert "'env_step'" in err.problems[0] and "'train_output'" in err.problems[1]
    assert str(err).startswith("the pipeline has 2 problems")


def test_undeclared_middleware_is_a_barrier():
    log = []
    t = Task()
    with t.start():
        t.use(lambda ctx: setattr(ctx, "obs", 1))
        t.use(declared("reader", reads=("obs",), log=log))
        t.run(max_step=1)
    assert log == ["reader"]


def test_undeclared_middleware_after_the_reader_is_named_as_a_possible_writer():
    def writes_obs(ctx):
        ctx.obs = 1

    err = check(declared("reader", reads=("obs",)), writes_obs)
    assert "writes_obs" in str(err) and "may write (undeclared)" in str(err)


def test_reads_after_may_be_written_later_in_the_chain():
    log = []
    t = Task()
    with t.start():
        t.use(declared("pusher", reads_after=("train_output",), log=log))
        t.use(declared("learner", writes=("train_output",), log=log))
        t.run(max_step=1)
    assert log == ["pusher", "learner"]


def test_reads_after_that_nothing_writes():
    err = check(declared("pusher", reads_after=("train_output",)))
    assert "after its yield" in str(err) and "ctx.train_output" in str(err)


@dataclasses.dataclass
class CountingContext(Context):
    counter: int = 0
    samples: list = None


def test_custom_context_fields_are_checked():
    log = []
    t = Task()
    with t.start(ctx=CountingContext()):
        t.use(declared("inc", reads=("counter",), writes=("samples",), log=log))
        t.run(max_step=1)
    assert log == ["inc"]
    err = check(declared("r", reads=("obs",)), ctx=CountingContext())
    assert "CountingContext declares no field 'obs'" in str(err)


def test_use_wrapper_keeps_contracts_visible_to_validation():
    def wrapper(fn):
        def wrapped(ctx):
            return fn(ctx)
        return wrapped

    t = Task()
    with t.start(ctx=OnlineRLContext()):
        t.use_wrapper(wrapper)
        t.use(declared("learner", reads=("train_data",)))
        with pytest.raises(PipelineError, match="'learner'"):
            t.run(max_step=1)
