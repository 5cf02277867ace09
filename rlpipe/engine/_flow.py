"""Running one middleware in two halves: up to its `yield`, and (later) the rest.

A middleware that calls `task.forward(child)` leaves `child` suspended at its `yield`; the
suspended children of a middleware are resumed, last first, when it calls `task.backward()` or,
failing that, right after its own post-`yield` code. Each thread has its own list of pending
children, so composite middleware may run in worker threads.
"""
from __future__ import annotations

import threading
import types
from typing import Any, Callable, List, NamedTuple, Optional

GeneratorType = types.GeneratorType
_DONE = object()  # next(gen, _DONE): a generator that returns gives this, without a StopIteration


class Node(NamedTuple):
    """A middleware of the chain as the Task holds it."""

    fn: Callable[[Any], Any]
    """What is called: the middleware after every `use_wrapper` decorator."""
    original: Any
    """What was `use()`d: named in messages, closed at `stop()`."""
    name: str
    contract: Any
    """Its Contract, or None when undeclared."""


class Suspended(NamedTuple):
    """A middleware stopped at its `yield` (`gen` None: it did not yield) and what it forwarded."""

    name: str
    gen: Optional[GeneratorType]
    children: Optional[List["Suspended"]]


class Flow:
    """The per-thread stacks behind `forward`/`backward`/`wrap`."""

    def __init__(self) -> None:
        self._local = threading.local()

    def pending(self) -> List[Suspended]:
        """This thread's list of middleware forwarded and not yet resumed."""
        try:
            return self._local.pending
        except AttributeError:
            pending: List[Suspended] = []
            self._local.pending = pending
            return pending

    def swap(self, pending: List[Suspended]) -> List[Suspended]:
        """Make `pending` this thread's list; return the previous one."""
        previous = self.pending()
        self._local.pending = pending
        return previous

    def enter(self, fn: Callable[[Any], Any], ctx: Any, name: str) -> Optional[Suspended]:
        """Run `fn(ctx)` up to its `yield`; None when nothing is left to run afterwards."""
        pending = self.pending()
        mark = len(pending)
        try:
            gen = fn(ctx)
            if type(gen) is GeneratorType:
                if next(gen, _DONE) is _DONE:  # returned before any yield
                    gen = None
            else:
                gen = None
        except BaseException as exc:
            discard(pending[mark:], exc)
            del pending[mark:]
            raise
        if len(pending) == mark:
            return None if gen is None else Suspended(name, gen, None)
        children = pending[mark:]
        del pending[mark:]
        return Suspended(name, gen, children)

    def resume(self, suspended: Suspended) -> None:
        """Run the post-`yield` part of a suspended middleware, then what it forwarded and left."""
        if suspended.children is None:
            pending = self.pending()
            if not pending:
                # Nothing forwarded before the yield and nothing waiting on this thread: run the
                # rest on this thread's (empty) list instead of swapping in a new one; what the
                # post-`yield` code forwards lands there and is resumed below, as after a swap.
                try:
                    self._finish(suspended)
                    if pending:
                        self.unwind()
                except BaseException as exc:
                    discard(pending, exc)
                    pending.clear()
                    raise
                return
        children = suspended.children if suspended.children is not None else []
        previous = self.swap(children)
        try:
            self._finish(suspended)
            self.unwind()
        except BaseException as exc:
            discard(children, exc)
            children.clear()
            raise
        finally:
            self._local.pending = previous

    @staticmethod
    def _finish(suspended: Suspended) -> None:
        """Run a suspended generator from its `yield` to its end; a second `yield` is an error."""
        gen = suspended.gen
        if gen is not None and next(gen, _DONE) is not _DONE:
            gen.close()
            raise RuntimeError(yielded_twice(suspended.name))

    def unwind(self) -> None:
        """Resume every pending middleware of this thread, last forwarded first (`task.backward()`)."""
        pending = self.pending()
        while pending:
            child = pending.pop()
            try:
                self.resume(child)
            except BaseException as exc:
                exc.add_note(f"in middleware {child.name!r} (after its yield, via task.backward)")
                discard(pending, exc)
                pending.clear()
                raise


def yielded_twice(name: str) -> str:
    """The error of a middleware generator that yielded a second time."""
    return (f"middleware {name!r} yielded more than once; a middleware generator must have "
            "exactly one `yield` (code before it runs on the way down, code after it on the "
            "way back)")


def discard(suspended: List[Suspended], error: BaseException) -> None:
    """Close suspended generators without running their post-`yield` code (after a failure)."""
    for item in reversed(suspended):
        if item.children:
            discard(item.children, error)
        if item.gen is not None:
            try:
                item.gen.close()
            except Exception as close_exc:  # report, but keep the original error first
                error.add_note(f"closing middleware {item.name!r} also failed: {close_exc!r}")
