"""Testing aids for the async scheduler, in the spirit of `trio.testing`.

`Sequencer` forces an order between code running in different threads; `EventLog` records what
ran when, so a test can assert that two middleware overlapped or never did.

>>> seq = Sequencer()
>>> with seq(0):
...     pass   # step 1 would block until step 0 has finished
"""
from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from ._contract import contract

__all__ = ["EventLog", "Sequencer"]


class Sequencer:
    """`with seq(n):` blocks until every step below n has finished, then runs step n.

    Each step number may be used once. A step that waits longer than `timeout` seconds raises
    TimeoutError (a forced order that the scheduler cannot satisfy deadlocks otherwise); a step
    that raised makes the steps after it raise too.
    """

    def __init__(self, timeout: float = 5.0) -> None:
        self._timeout = timeout
        self._cond = threading.Condition()
        self._next = 0
        self._claimed: set = set()
        self._broken: Optional[int] = None

    @contextlib.contextmanager
    def __call__(self, position: int) -> Iterator[None]:
        with self._cond:
            if position in self._claimed:
                raise RuntimeError(f"Sequencer step {position} was already used")
            self._claimed.add(position)
            if not self._cond.wait_for(lambda: self._next >= position or self._broken is not None,
                                       timeout=self._timeout):
                raise TimeoutError(f"Sequencer step {position} waited {self._timeout} s for step "
                                   f"{self._next}: the order asked for cannot happen")
            if self._broken is not None:
                raise RuntimeError(f"Sequencer step {position} cannot run: step {self._broken} failed")
        try:
            yield
        except BaseException:
            with self._cond:
                self._broken = position
                self._cond.notify_all()
            raise
        with self._cond:
            self._next = position + 1
            self._cond.notify_all()


class EventLog:
    """A thread-safe record of named events and spans, with their times."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: List[Tuple[str, float]] = []
        self._spans: Dict[str, List[Tuple[float, float]]] = {}

    def record(self, name: str) -> None:
        """Append `name` to the log."""
        with self._lock:
            self._entries.append((name, time.perf_counter()))

    @contextlib.contextmanager
    def span(self, name: str) -> Iterator[None]:
        """Record `name:start` and `name:end` around the block, and its interval."""
        self.record(f"{name}:start")
        begin = time.perf_counter()
        try:
            yield
        finally:
            end = time.perf_counter()
            self.record(f"{name}:end")
            with self._lock:
                self._spans.setdefault(name, []).append((begin, end))

    @property
    def entries(self) -> List[str]:
        """The names recorded so far, in order."""
        with self._lock:
            return [name for name, _ in self._entries]

    def overlapped(self, a: str, b: str) -> bool:
        """Whether any span of `a` overlapped in time with any span of `b`."""
        with self._lock:
            spans_a, spans_b = list(self._spans.get(a, ())), list(self._spans.get(b, ()))
        return any(s1 < e2 and s2 < e1 for s1, e1 in spans_a for s2, e2 in spans_b)

    def middleware(self, name: str, reads: Iterable[str] = (), writes: Iterable[str] = (),
                   sleep: float = 0.0, step: Optional[Tuple[Sequencer, int]] = None
                   ) -> Callable[[Any], None]:
        """A declared middleware that records a span `name` (sleeping `sleep` seconds inside it,
        and, with `step=(sequencer, n)`, running as step n of the sequencer)."""
        log = self

        @contract(reads=tuple(reads), writes=tuple(writes))
        def recorded(ctx: Any) -> None:
            order = step[0](step[1]) if step else contextlib.nullcontext()
            with order, log.span(name):
                if sleep:
                    time.sleep(sleep)

        recorded.__qualname__ = recorded.__name__ = name
        return recorded
