"""A small thread-safe event bus: `on`, `once`, `off`, `emit`."""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from ._listeners import running, warn_undeclared_emit
from ._names import middleware_name


class EventBus:
    """Listeners by event name. Handlers run in the emitting thread, outside the lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._handlers: Dict[str, List[Tuple[Callable[..., Any], bool]]] = {}

    def on(self, event: str, fn: Callable[..., Any]) -> None:
        self._add(event, fn, once=False)

    def once(self, event: str, fn: Callable[..., Any]) -> None:
        self._add(event, fn, once=True)

    def _add(self, event: str, fn: Callable[..., Any], once: bool) -> None:
        if not callable(fn):
            raise TypeError(f"handler for event {event!r} must be callable, got {fn!r}")
        with self._lock:
            self._handlers.setdefault(event, []).append((fn, once))

    def off(self, event: str, fn: Optional[Callable[..., Any]] = None) -> None:
        with self._lock:
            if fn is None:
                self._handlers.pop(event, None)
                return
            kept = [(h, o) for h, o in self._handlers.get(event, ()) if h is not fn and h != fn]
            if kept:
                self._handlers[event] = kept
            else:
                self._handlers.pop(event, None)

    def emit(self, event: str, *args: Any, **kwargs: Any) -> None:
        with self._lock:
            handlers = self._handlers.get(event)
            if not handlers:
                return
            snapshot = list(handlers)
            if any(once for _, once in handlers):
                self._handlers[event] = [(h, o) for h, o in handlers if not o]
        for fn, _ in snapshot:
            try:
                fn(*args, **kwargs)
            except BaseException as exc:
                exc.add_note(f"in handler {middleware_name(fn)!r} of event {event!r}")
                raise

    def events(self) -> frozenset:
        """The events that have a listener now."""
        with self._lock:
            return frozenset(self._handlers)

    def clear(self) -> None:
        with self._lock:
            self._handlers.clear()


class EventsMixin:
    """The events part of `Task`: `on`, `once`, `off`, `emit` over its `EventBus`."""

    _events: EventBus
    _undeclared_emits: Set[Tuple[str, str]]
    """(middleware, event) pairs already reported as emitted without being declared."""

    def on(self, event: str, fn: Callable[..., Any]) -> None:
        """Call `fn(*args, **kwargs)` on every `emit(event, ...)` until `off`/`stop()`."""
        self._events.on(event, fn)

    def once(self, event: str, fn: Callable[..., Any]) -> None:
        """Call `fn` on the next `emit(event, ...)` only."""
        self._events.once(event, fn)

    def off(self, event: str, fn: Optional[Callable[..., Any]] = None) -> None:
        """Remove `fn` (or every handler) from `event`."""
        self._events.off(event, fn)

    def emit(self, event: str, *args: Any, **kwargs: Any) -> None:
        """Call the handlers of `event` in this thread (thread-safe); handler errors propagate.

        Emitted by a middleware of the chain whose contract does not declare `event`: a
        one-line UserWarning names both (once per middleware and event; see `_listeners`)."""
        slot = running()
        node = slot.node
        if node is None:
            self._events.emit(event, *args, **kwargs)
            return
        warn_undeclared_emit(node, event, self._undeclared_emits)
        slot.node = None  # what the handlers emit is theirs, not this middleware's
        try:
            self._events.emit(event, *args, **kwargs)
        finally:
            slot.node = node
