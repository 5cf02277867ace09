"""Composite middleware: `serial(...)` and `parallel(...)`."""
from __future__ import annotations

import threading
from typing import Any, Callable, Iterator, List, Optional, Sequence

from ._contract import Contract, contract_of, redeclare
from ._errors import PipelineError
from ._flow import Flow, Suspended, discard
from ._names import middleware_name, set_name


def _close_children(fns: Sequence[Any]) -> None:
    for fn in reversed(fns):
        close = None if isinstance(fn, type) else getattr(fn, "close", None)
        if callable(close):
            close()


class Serial:
    """Middleware that runs `fns` one after another, as if each had been `use()`d in turn."""

    def __init__(self, flow: Flow, fns: Sequence[Callable[[Any], Any]]) -> None:
        self._flow = flow
        self._fns = list(fns)
        self._names = [middleware_name(fn) for fn in fns]
        set_name(self, f"serial({', '.join(self._names)})")
        combined = _serial_contract([contract_of(fn) for fn in fns])
        if combined is not None:
            redeclare(self, combined)

    def __call__(self, ctx: Any) -> Iterator[None]:
        flow = self._flow
        pending = flow.pending()
        for fn, name in zip(self._fns, self._names):
            try:
                suspended = flow.enter(fn, ctx, name)
            except BaseException as exc:
                exc.add_note(f"in middleware {name!r} (inside serial)")
                raise
            if suspended is not None:
                pending.append(suspended)
        yield
        flow.unwind()

    def close(self) -> None:
        """Close the children that have a `close()` (called once by `task.stop()`)."""
        _close_children(self._fns)


def _serial_contract(contracts: List[Optional[Contract]]) -> Optional[Contract]:
    if any(c is None for c in contracts):
        return None
    reads: set = set()
    writes: set = set()
    reads_after: set = set()
    optional: set = set()
    for c in contracts:
        reads |= c.reads - writes  # a field written by an earlier child is internal
        optional |= c.optional_reads - writes
        writes |= c.writes
        reads_after |= c.reads_after
    return Contract(frozenset(reads), frozenset(writes), frozenset(reads_after),
                    _common_role(contracts), frozenset(optional - reads),
                    emits=frozenset().union(*(c.emits for c in contracts)),
                    finishes=any(c.finishes for c in contracts))


def _common_role(contracts: List[Contract]) -> Any:
    """The role every child shares (a composite of one role's middleware keeps it), else None."""
    roles = {c.role for c in contracts}
    return roles.pop() if len(roles) == 1 else None


class Parallel:
    """Middleware that runs the pre-`yield` parts of `fns` concurrently, one thread each.

    The first runs in the calling thread, the others in threads started and joined within the
    call (none outlives it). Post-`yield` parts run afterwards, last first, in the calling thread.
    Declared children must not conflict (one writing what another reads or writes).
    """

    def __init__(self, flow: Flow, fns: Sequence[Callable[[Any], Any]]) -> None:
        self._flow = flow
        self._fns = list(fns)
        self._names = [middleware_name(fn) for fn in fns]
        set_name(self, f"parallel({', '.join(self._names)})")
        contracts = [contract_of(fn) for fn in fns]
        _check_independent(self._names, contracts)
        if contracts and all(c is not None for c in contracts):
            redeclare(self, Contract(
                frozenset().union(*(c.reads for c in contracts)),
                frozenset().union(*(c.writes for c in contracts)),
                frozenset().union(*(c.reads_after for c in contracts)),
                _common_role(contracts),
                frozenset().union(*(c.optional_reads for c in contracts)),
                emits=frozenset().union(*(c.emits for c in contracts)),
                finishes=any(c.finishes for c in contracts),
            ))

    def __call__(self, ctx: Any) -> Iterator[None]:
        n = len(self._fns)
        results: List[Optional[Suspended]] = [None] * n
        errors: List[Optional[BaseException]] = [None] * n

        def run(k: int) -> None:
            try:
                results[k] = self._flow.enter(self._fns[k], ctx, self._names[k])
            except BaseException as exc:  # handed to the calling thread below
                errors[k] = exc

        threads = [threading.Thread(target=run, args=(k,), name=f"rlpipe-parallel-{self._names[k]}")
                   for k in range(1, n)]
        for thread in threads:
            thread.start()
        if n:
            run(0)
        for thread in threads:
            thread.join()
        suspended = [s for s in results if s is not None]
        failed = [(name, e) for name, e in zip(self._names, errors) if e is not None]
        if failed:
            first = failed[0][1]
            first.add_note(f"in middleware {failed[0][0]!r} (inside parallel)")
            for name, other in failed[1:]:
                first.add_note(f"middleware {name!r} inside the same parallel also failed: {other!r}")
            discard(suspended, first)
            raise first
        if not suspended:
            return
        yield
        for k, item in enumerate(reversed(suspended)):
            try:
                self._flow.resume(item)
            except BaseException as exc:
                exc.add_note(f"in middleware {item.name!r} (after its yield, inside parallel)")
                discard(suspended[: len(suspended) - 1 - k], exc)
                raise

    def close(self) -> None:
        """Close the children that have a `close()` (called once by `task.stop()`)."""
        _close_children(self._fns)


def _check_independent(names: List[str], contracts: List[Optional[Contract]]) -> None:
    problems = []
    for i, a in enumerate(contracts):
        for j in range(i + 1, len(contracts)):
            b = contracts[j]
            if a is None or b is None or not a.conflicts_with(b):
                continue
            a_reads, b_reads = a.reads | a.optional_reads, b.reads | b.optional_reads
            shared = sorted((a.writes & (b_reads | b.writes)) | (a_reads & b.writes))
            problems.append(
                f"parallel({', '.join(names)}): {names[i]!r} and {names[j]!r} both use "
                f"{', '.join('ctx.' + s for s in shared)} and one of them writes it, so running "
                f"them at the same time would race. Fix: use serial(...) for these two, or change "
                f"one so that it neither reads nor writes what the other writes."
            )
    if problems:
        raise PipelineError(problems)
