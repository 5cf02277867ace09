"""`contract(optional_reads=...)`: "read if the context has it" (issue #20)."""
import dataclasses

import pytest

from rlpipe.contexts import OfflineRLContext, OnlineRLContext, field_names
from rlpipe.engine import Contract, PipelineError, Task, contract, contract_of
from rlpipe.engine._scheduler import dependencies


@contract(reads=("train_iter",), optional_reads=("env_step", "train_iter"))
def reporter(ctx):
    ctx.train_iter  # noqa: B018  (a read)
    return getattr(ctx, "env_step", None)


@contract(writes=("env_step",))
def stepper(ctx):
    ctx.env_step += 1


def test_contract_keeps_optional_reads_apart_from_reads():
    c = contract_of(reporter)
    assert c.reads == {"train_iter"} and c.optional_reads == {"env_step"}
    assert c.resolve(frozenset({"train_iter", "env_step"})).reads == {"train_iter", "env_step"}
    assert c.resolve(frozenset({"train_iter"})) == Contract(reads=frozenset({"train_iter"}))
    with pytest.raises(TypeError, match="optional_reads='env_step'"):
        contract(optional_reads="env_step")


def test_a_field_the_context_lacks_is_ignored_by_validation():
    t = Task()
    with t.start(ctx=OfflineRLContext()):
        t.use(reporter)
        t.run(max_step=2)  # OfflineRLContext has no env_step: no "declares no field" error


def test_a_field_the_context_declares_is_validated_as_a_read():
    @dataclasses.dataclass
    class Ctx(OfflineRLContext):
        env_step: int = None  # declared, no usable default, not kept

    t = Task()
    with t.start(ctx=Ctx()):
        t.use(reporter)
        with pytest.raises(PipelineError, match="reads ctx.env_step"):
            t.run(max_step=1)


def test_async_dependencies_count_a_declared_optional_read_only():
    online = [contract_of(n).resolve(field_names(OnlineRLContext)) for n in (stepper, reporter)]
    assert dependencies(online) == [(), (0,)]  # reporter waits for the env_step writer
    offline = [contract_of(n).resolve(frozenset({"train_iter"})) for n in (stepper, reporter)]
    assert dependencies(offline) == [(), ()]


def test_async_run_orders_the_optional_reader_after_the_writer():
    seen = []

    @contract(optional_reads=("env_step",))
    def read_step(ctx):
        seen.append(ctx.env_step)

    t = Task()
    with t.start(async_mode=True, ctx=OnlineRLContext()):
        t.use(stepper)
        t.use(read_step)
        t.run(max_step=5)
    assert seen == [1, 2, 3, 4, 5]


def test_serial_carries_optional_reads_not_written_inside():
    t = Task()
    with t.start():
        c = contract_of(t.serial(stepper, reporter))
        assert c.reads == {"train_iter"} and c.optional_reads == frozenset()
        c = contract_of(t.serial(reporter))
        assert c.optional_reads == {"env_step"}
