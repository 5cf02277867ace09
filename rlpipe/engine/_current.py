"""Which Task is running: lets library middleware reach `finish` and events without a global."""
from __future__ import annotations

from typing import Any, Optional

_running: Optional[Any] = None


def current_task() -> Any:
    """The Task whose `run()` is executing now; the global `task` when none is running."""
    if _running is not None:
        return _running
    from . import task  # the global instance

    return task


def set_running(task: Optional[Any]) -> None:
    """Called by Task.run on entry (its own instance) and exit (None)."""
    global _running
    _running = task
