"""The public face of rlpipe.engine and the package root."""
import rlpipe
import rlpipe.engine
import rlpipe.engine.testing
from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import PipelineError, Role, Task, contract, current_task, task


def test_engine_public_names():
    assert rlpipe.engine.__all__ == [
        "Contract", "MiddlewareStats", "PipelineError", "Profile", "Role", "Task",
        "contract", "contract_of", "current_task", "redeclare", "task",
    ]
    for name in rlpipe.engine.__all__:
        assert hasattr(rlpipe.engine, name)
    assert rlpipe.engine.testing.__all__ == ["EventLog", "Sequencer"]


def test_package_root_exposes_task():
    assert rlpipe.task is task and rlpipe.Task is Task


def test_global_task_is_a_task_and_instances_are_independent():
    assert isinstance(task, Task)
    a, b = Task(), Task()
    with a.start(), b.start(ctx=OnlineRLContext()):
        a.use(lambda ctx: None)
        assert a.ctx is not b.ctx
        a.run(max_step=1)
    assert a is not task and issubclass(PipelineError, Exception)
    assert callable(contract)


def test_role_enum_is_reachable_from_the_task():
    assert Task.role is Role and task.role.LEARNER is Role.LEARNER
    assert {r.value for r in Role} == {"learner", "collector", "evaluator", "fetcher"}


def test_current_task_is_the_running_task():
    seen = []
    t = Task()
    with t.start():
        t.use(lambda ctx: seen.append(current_task()))
        t.run(max_step=2)
    assert seen == [t, t]
    assert current_task() is task
