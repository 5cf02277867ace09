"""Checking the task's event listeners against the events the chain declares it emits.

A listener for an event that no middleware declares (`@contract(emits=...)`) is legal: user
events may be emitted from anywhere (a listener, a thread, code outside the chain). What is
caught is the likely typo: a listener whose event is not declared but is a close match of one
that is (`"eval_ended"` beside a declared `"eval_end"`), which would otherwise never fire and
say nothing. It is a warning, not an error, because such an event may still be emitted from
outside the chain; a chain with an undeclared middleware (which may emit anything) is not checked.
"""
from __future__ import annotations

import difflib
import warnings
from typing import Iterable, List, Optional, Sequence, Tuple

from ._contract import Contract

ENGINE_EVENTS = frozenset({"finish"})
"""Events the Task emits itself."""

_CUTOFF = 0.8  # "eval_ended" ~ "eval_end" (0.89) is flagged, "episode_start" ~ "episode_end" (0.67) is not


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
