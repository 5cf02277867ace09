"""One iteration of a chain: in order (sync), or as a dataflow graph on the task's threads (async).

Each function updates the per-middleware `counts`/`totals` of the profile and adds to an error
a note naming the middleware, its position and which half (before or after its `yield`) failed.
While a middleware's code runs, `running().node` names it (for the check of the events it emits).
"""
from __future__ import annotations

import time
import types
from concurrent.futures import Executor
from typing import Any, List, Tuple

from ._flow import Flow, Node, Suspended, discard, yielded_twice
from ._listeners import running
from ._scheduler import run_graph

_Gen = types.GeneratorType
_DONE = object()  # next(gen, _DONE): a generator that returns gives this, without a StopIteration


def where(nodes: List[Node], i: int, part: str, thread: str = "") -> str:
    """The note that locates a failure in the chain."""
    return (f"in middleware {nodes[i].name!r} (position {i} of {len(nodes)} in the chain, "
            f"{part}{thread})")


def iterate_sync(flow: Flow, ctx: Any, nodes: List[Node], counts: List[int],
                 totals: List[float]) -> None:
    """Run every node up to its `yield` in order, then the post-`yield` parts in reverse."""
    pending = flow.pending()
    # (position, what to resume): a bare generator for a middleware that forwarded nothing
    # (the common case, resumed in place by `backward`), else a `Suspended` with its children
    suspended: List[Tuple[int, Any]] = []
    perf = time.perf_counter
    slot = running()
    i = -1
    outer = slot.node  # a task run from inside another's middleware
    t = perf()
    try:
        for node in nodes:
            i += 1
            slot.node = node
            gen = node.fn(ctx)
            if type(gen) is _Gen:
                if next(gen, _DONE) is _DONE:  # returned before any yield
                    gen = None
            else:
                gen = None
            if pending:
                suspended.append((i, Suspended(node.name, gen, pending[:])))
                pending.clear()
            elif gen is not None:
                suspended.append((i, gen))
            now = perf()
            totals[i] += now - t
            counts[i] += 1
            t = now
    except BaseException as exc:
        exc.add_note(where(nodes, i, "before its yield"))
        discard(pending, exc)
        pending.clear()
        discard(as_suspended(nodes, suspended), exc)
        raise
    finally:
        slot.node = outer
    backward(flow, nodes, suspended, totals)


def as_suspended(nodes: List[Node], items: List[Tuple[int, Any]]) -> List[Suspended]:
    """The items of a `suspended` list as `Suspended` (for `discard` after a failure)."""
    return [Suspended(nodes[i].name, item, None) if type(item) is _Gen else item
            for i, item in items]


def backward(flow: Flow, nodes: List[Node], suspended: List[Tuple[int, Any]],
             totals: List[float]) -> None:
    """Run the post-`yield` parts of `suspended` (bare generators or `Suspended`), last first.

    A bare generator is finished on this thread's list of pending middleware, which is empty
    here, so what its post-`yield` code forwards lands there and is resumed right after it
    (as `Flow.resume` does, without its call and checks).
    """
    perf = time.perf_counter
    slot = running()
    pending = flow.pending()
    outer = slot.node
    resume = flow.resume
    t = perf()
    i = -1
    try:
        while suspended:
            i, item = suspended.pop()
            slot.node = nodes[i]
            if type(item) is _Gen and not pending:
                if next(item, _DONE) is not _DONE:
                    item.close()
                    raise RuntimeError(yielded_twice(nodes[i].name))
                if pending:
                    flow.unwind()
            elif type(item) is _Gen:  # this thread has pending middleware: the general path
                resume(Suspended(nodes[i].name, item, None))
            else:
                resume(item)
            now = perf()
            totals[i] += now - t
            t = now
    except BaseException as exc:
        exc.add_note(where(nodes, i, "after its yield"))
        discard(pending, exc)
        pending.clear()
        discard(as_suspended(nodes, suspended), exc)
        raise
    finally:
        slot.node = outer


def iterate_async(executor: Executor, flow: Flow, ctx: Any, nodes: List[Node],
                  deps: List[Tuple[int, ...]], counts: List[int], totals: List[float]) -> None:
    """Run the forward parts as a dataflow graph on `executor`, then the post-`yield` parts."""
    suspended, errors = run_graph(executor, flow, nodes, deps, ctx, counts, totals)
    if errors:
        j, first = errors[0]
        first.add_note(where(nodes, j, "before its yield", ", in a worker thread"))
        for k, other in errors[1:]:
            first.add_note(f"middleware {nodes[k].name!r} also failed in this iteration: {other!r}")
        discard(as_suspended(nodes, suspended), first)
        raise first
    backward(flow, nodes, suspended, totals)
