"""Which Task is running: lets library middleware reach `finish` and events without a global.

It also holds the process's global `task` (set once by `rlpipe.engine`'s `__init__`), so that
engine modules reach it without importing their own package back.
"""
from __future__ import annotations

from typing import Any, Optional

_running: Optional[Any] = None
_global: Optional[Any] = None


def current_task() -> Any:
    """The Task whose `run()` is executing now; the global `task` when none is running."""
    if _running is not None:
        return _running
    return global_task()


def global_task() -> Any:
    """The global `task` of this process (`from rlpipe.engine import task`)."""
    if _global is None:
        raise RuntimeError("rlpipe.engine._current.global_task(): the global task is not set "
                           "yet; import rlpipe.engine (its __init__ makes it) before asking")
    return _global


def set_global(task: Any) -> None:
    """Called once by `rlpipe.engine`'s `__init__` with the global `task`."""
    global _global
    _global = task


def set_running(task: Optional[Any]) -> None:
    """Called by Task.run on entry (its own instance) and exit (None)."""
    global _running
    _running = task
