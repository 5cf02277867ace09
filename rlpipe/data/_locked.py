"""`PicklesWithoutLock`: a mixin for objects guarded by `self._lock` that must still pickle."""
from __future__ import annotations

import threading
from typing import Any, Dict


class PicklesWithoutLock:
    """Pickling leaves `self._lock` out (a lock cannot be pickled); unpickling makes a new one.

    For the thread-safe data objects (buffers, the update schedule) that Ray and subprocesses
    ship between processes."""

    _lock: Any

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
