"""Contracts: which context fields a middleware reads and writes."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, FrozenSet, Iterable, Optional, TypeVar

T = TypeVar("T")
_ATTR = "__rlpipe_contract__"


@dataclasses.dataclass(frozen=True)
class Contract:
    """The context fields a middleware reads before its `yield`, writes, and reads after it."""

    reads: FrozenSet[str] = frozenset()
    writes: FrozenSet[str] = frozenset()
    reads_after: FrozenSet[str] = frozenset()
    """Fields read by code after `yield` (e.g. priorities written back from `train_output`):
    they may be written by any middleware of the chain, earlier or later."""

    def conflicts_with(self, later: "Contract") -> bool:
        """Whether `later` must wait for this one in an iteration (write/read, read/write, write/write)."""
        return bool(
            self.writes & later.reads or self.reads & later.writes or self.writes & later.writes
        )


def contract(
    reads: Iterable[str] = (), writes: Iterable[str] = (), reads_after: Iterable[str] = ()
) -> Callable[[T], T]:
    """Declare the context fields a middleware uses; decorate a function or a class.

    >>> @contract(reads=("obs",), writes=("action",))
    ... def act(ctx): ...
    """
    for arg_name, arg in (("reads", reads), ("writes", writes), ("reads_after", reads_after)):
        if isinstance(arg, str):
            raise TypeError(
                f"contract({arg_name}={arg!r}): pass a tuple of field names, e.g. ({arg!r},)"
            )
    declared = Contract(frozenset(reads), frozenset(writes), frozenset(reads_after))

    def decorate(target: T) -> T:
        setattr(target, _ATTR, declared)
        return target

    return decorate


def contract_of(fn: Any) -> Optional[Contract]:
    """The contract declared on a middleware (function, class or instance), or None."""
    return getattr(fn, _ATTR, None)
