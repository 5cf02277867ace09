"""Checking events against what the chain declares (`@contract(emits=...)`): the events a
middleware emits, and the events the task's listeners wait for.

Emits: while the task runs a middleware's code (before or after its `yield`), the thread running
it knows which middleware it is (`running()`); an event that middleware emits and its contract
does not declare is reported in a one-line UserWarning naming the middleware, the event and the
fix, once per middleware and event. Code run by an event's handlers is not checked (a handler
belongs to whoever registered it, not to the middleware whose emit called it), nor code of an
undeclared middleware (it may emit anything), nor the children `parallel(...)` runs in threads
of their own (their declarations are part of the composite's).

Listeners: a listener for an event that no middleware declares is legal: user events may be
emitted from anywhere (a listener, a thread, code outside the chain). What is caught is the
likely typo: a listener whose event is not declared but is a close match of one that is
(`"eval_ended"` beside a declared `"eval_end"`), which would otherwise never fire and say
nothing. It is a warning, not an error, because such an event may still be emitted from outside
the chain; a chain with an undeclared middleware (which may emit anything) is not checked.
"""
from __future__ import annotations

import difflib
import threading
import warnings
from typing import Any, Iterable, List, Optional, Sequence, Set, Tuple

from ._contract import Contract

ENGINE_EVENTS = frozenset({"finish"})
"""Events the Task emits itself."""

_CUTOFF = 0.8  # "eval_ended" ~ "eval_end" (0.89) is flagged, "episode_start" ~ "episode_end" (0.67) is not


class Running:
    """One thread's `node`: the chain node (name and contract) whose code the thread runs now,
    else None. Set by the iteration (`_iterate`, `_scheduler`) around each middleware call;
    cleared while an event's handlers run. A plain object held per thread, because the sync
    iteration sets it twice per middleware and an attribute of a `threading.local` costs
    several times more to set."""

    __slots__ = ("node",)

    def __init__(self) -> None:
        self.node: Any = None


_THREAD = threading.local()


def running() -> Running:
    """This thread's `Running`."""
    try:
        return _THREAD.running
    except AttributeError:
        _THREAD.running = slot = Running()
        return slot


def declared_events(contracts: Iterable[Optional[Contract]]) -> Optional[frozenset]:
    """Every event the chain may emit (the engine's included); None when a middleware is
    undeclared and so may emit anything."""
    events = set(ENGINE_EVENTS)
    for c in contracts:
        if c is None:
            return None
        events |= c.emits
    return frozenset(events)


def unheard_listeners(chain: Sequence[Tuple[str, Optional[Contract]]],
                      listened: Iterable[str]) -> List[str]:
    """One message per listened event that looks like a misspelt declared event."""
    declared = declared_events(c for _, c in chain)
    if declared is None:
        return []
    problems = []
    for event in sorted(set(listened) - declared):
        close = difflib.get_close_matches(event, sorted(declared), n=1, cutoff=_CUTOFF)
        if close:
            emitters = [name for name, c in chain if c is not None and close[0] in c.emits]
            by = f" (emitted by {', '.join(repr(n) for n in emitters)})" if emitters else \
                " (emitted by the task)"
            problems.append(
                f"a listener waits for event {event!r}, which no middleware of the chain declares "
                f"it emits; did you mean {close[0]!r}{by}? Fix: listen with "
                f"task.on({close[0]!r}, fn), or declare the event on the middleware that emits it "
                f"with @contract(..., emits=({event!r},))."
            )
    return problems


def warn_unheard_listeners(chain: Sequence[Tuple[str, Optional[Contract]]],
                           listened: Iterable[str]) -> None:
    """Warn (UserWarning) about each listener `unheard_listeners` finds."""
    for message in unheard_listeners(chain, listened):
        warnings.warn(message, UserWarning, stacklevel=3)


def running_node() -> Any:
    """The chain node whose code this thread runs now (None outside the chain's code)."""
    return running().node


def undeclared_emit(node: Any, event: str) -> Optional[str]:
    """The one-line report of `node` emitting `event` without declaring it; None when its
    contract declares it or it has none (an undeclared middleware may emit anything)."""
    declared = node.contract
    if declared is None or event in declared.emits:
        return None
    return (f"middleware {node.name!r} emitted event {event!r}, which its @contract does not "
            f"declare; fix: add it to the contract, @contract(..., emits=({event!r},)), so that "
            f"`rlpipe graph` shows it and the task checks its listeners against it")


def warn_undeclared_emit(node: Any, event: str, reported: Set[Tuple[str, str]]) -> None:
    """Warn (UserWarning) once per middleware and event in `reported` about `undeclared_emit`."""
    message = undeclared_emit(node, event)
    if message is None or (node.name, event) in reported:
        return
    reported.add((node.name, event))
    warnings.warn(message, UserWarning, stacklevel=3)  # at the middleware's emit(...) call
