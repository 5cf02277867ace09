"""Middleware made from other middleware by the task: locked (`use(fn, lock=...)`), decorated
(`use_wrapper`), and split in two callables (`wrap`)."""
from __future__ import annotations

from typing import Any, Callable, Iterator, Optional

from ._contract import Contract, contract_of, redeclare
from ._flow import Flow
from ._names import middleware_name, set_name


def lock_of(lock: Any, task_lock: Any) -> Optional[Any]:
    """The lock `use(fn, lock=...)` asked for: None for False/None, the task-wide lock for True,
    or the object itself when it has acquire/release (threading.Lock, RLock ...)."""
    if lock is None or lock is False:
        return None
    if lock is True:
        return task_lock
    if callable(getattr(lock, "acquire", None)) and callable(getattr(lock, "release", None)):
        return lock
    raise TypeError(f"task.use(fn, lock={lock!r}): lock must be True (the task-wide lock), False, "
                    f"or a lock object such as threading.Lock()")


class Locked:
    """Runs `fn` holding `lock`: its part before `yield` and its part after, each whole.

    As in DI-engine, the lock is released between the two parts, so middleware running in the
    meantime may take it. The contract, name and `close()` are those of `fn`.
    """

    def __init__(self, flow: Flow, fn: Callable[[Any], Any], lock: Any) -> None:
        self._flow = flow
        self._fn = fn
        self._lock = lock
        self._name = middleware_name(fn)
        set_name(self, self._name)
        declared = contract_of(fn)
        if declared is not None:
            redeclare(self, declared)

    def __call__(self, ctx: Any) -> Iterator[None]:
        with self._lock:
            item = self._flow.enter(self._fn, ctx, self._name)
        if item is None:
            return
        yield
        with self._lock:
            self._flow.resume(item)


def decorated(decorator: Callable[[Any], Any], fn: Callable[[Any], Any],
              declared: Optional[Contract]) -> Callable[[Any], Any]:
    """`decorator(fn)` for `use_wrapper`, carrying `fn`'s contract when the result lost it."""
    wrapped = decorator(fn)
    if not callable(wrapped):
        raise TypeError(f"a use_wrapper() decorator returned {wrapped!r} for middleware "
                        f"{middleware_name(fn)!r}; it must return a callable fn(ctx)")
    if wrapped is not fn and declared is not None and contract_of(wrapped) != declared:
        try:
            redeclare(wrapped, declared)
        except (AttributeError, TypeError):
            pass  # the chain's node carries the contract anyway
    return wrapped


def _noop_backward() -> None:
    """Nothing runs after the yield of a middleware that did not yield."""


def split(flow: Flow, fn: Callable[[Any], Any], lock: Optional[Any] = None
          ) -> Callable[[Any], Callable[[], None]]:
    """`task.wrap(fn)`: a callable `forward(ctx)` that runs `fn` to its yield and returns a
    callable running the rest (a no-op callable when `fn` did not yield); each part holds
    `lock` when one is given."""
    name = middleware_name(fn)

    def forward(ctx: Any) -> Callable[[], None]:
        try:
            if lock is None:
                item = flow.enter(fn, ctx, name)
            else:
                with lock:
                    item = flow.enter(fn, ctx, name)
        except BaseException as exc:
            exc.add_note(f"in middleware {name!r} (run by task.wrap)")
            raise
        if item is None:
            return _noop_backward

        def backward() -> None:
            try:
                if lock is None:
                    flow.resume(item)
                else:
                    with lock:
                        flow.resume(item)
            except BaseException as exc:
                exc.add_note(f"in middleware {name!r} (after its yield, run by task.wrap)")
                raise
        return backward

    set_name(forward, name)
    declared = contract_of(fn)
    if declared is not None:
        redeclare(forward, declared)
    return forward
