"""The engine: Task, middleware contracts, the async scheduler.

`task` is the global instance for scripts; `Task()` makes independent ones (tests, embedding);
`current_task()` is the Task whose `run()` is executing (the global `task` otherwise).
Testing aids (a Sequencer that forces an order between middleware, an EventLog that records
spans) live in `rlpipe.engine.testing`.
"""
from ._contract import Contract, contract, contract_of, redeclare
from . import _current
from ._current import current_task
from ._errors import PipelineError
from ._profile import MiddlewareStats, Profile
from ._roles import Role
from ._task import Task

task = Task()
"""The global task for scripts: `from rlpipe.engine import task`."""
_current.set_global(task)

__all__ = [
    "Contract",
    "MiddlewareStats",
    "PipelineError",
    "Profile",
    "Role",
    "Task",
    "contract",
    "contract_of",
    "current_task",
    "redeclare",
    "task",
]
