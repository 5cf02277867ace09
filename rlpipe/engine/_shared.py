"""Objects the middleware of one run share: `Task.shared(key, make)`.

Middleware built apart (DI-engine's `inferencer` and `rolloutor`, say) sometimes need one
object between them. They ask the task that runs them, so each run, and each `Task`, has its
own and nothing outlives the run in a module global.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Hashable


class SharedObjects:
    """A run's shared objects by key; thread-safe; `clear()` at the end of the run."""

    def __init__(self) -> None:
        self._objects: Dict[Hashable, Any] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The object under `key`, made by `make()` when there is none yet."""
        with self._lock:
            found = self._objects.get(key)
            if found is None:
                found = self._objects[key] = make()
        return found

    def clear(self) -> None:
        with self._lock:
            self._objects = {}


class SharedMixin:
    """The shared-objects part of `Task`."""

    _shared: SharedObjects

    def shared(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The object this run's middleware share under `key`, made by `make()` on first use and
        dropped at `stop()` (e.g. the env cursor of `inferencer` and `rolloutor`, keyed by env)."""
        return self._shared.get(key, make)
