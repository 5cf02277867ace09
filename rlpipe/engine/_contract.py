"""Contracts: which context fields a middleware reads and writes, which events it emits, and
whether it may finish the run."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, FrozenSet, Iterable, Optional, TypeVar, Union

from ._roles import Role

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
    role: Optional[Role] = None
    """The process role the middleware belongs to (None: every process). In a process that does
    not serve that role, `task.use()` puts a no-op in its place (see `Task.serves`)."""
    optional_reads: FrozenSet[str] = frozenset()
    """Fields read only when the context class declares them (e.g. `env_step`, which an
    `OfflineRLContext` does not have). Against a context that declares one, it is a read like
    any other (validated, and ordered in async mode); one it does not declare is ignored."""
    emits: FrozenSet[str] = frozenset()
    """Events the middleware emits through `current_task().emit(...)` (e.g. "eval_end")."""
    finishes: bool = False
    """Whether the middleware may end the run (`current_task().end_run(reason)`, or
    `current_task().finish = True`)."""

    def conflicts_with(self, later: "Contract") -> bool:
        """Whether `later` must wait for this one in an iteration (write/read, read/write,
        write/write). Optional reads count as reads here; `resolve` them first to be exact."""
        mine = self.reads | self.optional_reads
        theirs = later.reads | later.optional_reads
        return bool(self.writes & theirs or mine & later.writes or self.writes & later.writes)

    def resolve(self, declared: FrozenSet[str]) -> "Contract":
        """This contract against a context class declaring `declared`: the optional reads it
        declares become reads, the others are dropped."""
        if not self.optional_reads:
            return self
        return dataclasses.replace(self, reads=self.reads | (self.optional_reads & declared),
                                   optional_reads=frozenset())


def contract(
    reads: Iterable[str] = (), writes: Iterable[str] = (), reads_after: Iterable[str] = (),
    role: Union[Role, str, None] = None, optional_reads: Iterable[str] = (),
    emits: Iterable[str] = (), finishes: bool = False,
) -> Callable[[T], T]:
    """Declare the context fields a middleware uses; decorate a function or a class.

    `role` (a `Role` or its value, e.g. "collector") names the process role the middleware
    belongs to in a distributed run; leave it None for middleware every process runs.
    `optional_reads` are fields read only if the context has them ("read if the context has
    it"): the middleware must then check, e.g. with `getattr(ctx, "env_step", None)`.
    `emits` names the events it emits with `current_task().emit(...)`; `finishes=True` says it
    may end the run with `current_task().end_run(reason)` or `.finish = True` (both shown by the middleware table and
    `rlpipe graph`; the task checks listeners against the declared events).

    >>> @contract(reads=("obs",), writes=("action",), role="collector", emits=("acted",))
    ... def act(ctx): ...
    >>> @contract(reads=("train_iter",), optional_reads=("env_step",))
    ... def report(ctx): print(ctx.train_iter, getattr(ctx, "env_step", None))
    """
    for arg_name, arg in (("reads", reads), ("writes", writes), ("reads_after", reads_after),
                          ("optional_reads", optional_reads), ("emits", emits)):
        if isinstance(arg, str):
            raise TypeError(
                f"contract({arg_name}={arg!r}): pass a tuple of field names, e.g. ({arg!r},)"
            )
    if not isinstance(finishes, bool):
        raise TypeError(f"contract(finishes={finishes!r}): pass True (the middleware may set "
                        f"current_task().finish) or False")
    declared = Contract(frozenset(reads), frozenset(writes), frozenset(reads_after),
                        None if role is None else Role.parse(role),
                        frozenset(optional_reads) - frozenset(reads), frozenset(emits), finishes)

    def decorate(target: T) -> T:
        setattr(target, _ATTR, declared)
        return target

    return decorate


def contract_of(fn: Any) -> Optional[Contract]:
    """The contract declared on a middleware (function, class or instance), or None."""
    return getattr(fn, _ATTR, None)


def redeclare(target: T, declared: Contract) -> T:
    """Put `declared` (all of it, role included) on `target`, e.g. a wrapper of a middleware."""
    setattr(target, _ATTR, declared)
    return target
