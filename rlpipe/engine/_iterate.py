"""One iteration of a chain: in order (sync), or as a dataflow graph on the task's threads (async).

Each function updates the per-middleware `counts`/`totals` of the profile and adds to an error
a note naming the middleware, its position and which half (before or after its `yield`) failed.
While a middleware's code runs, `RUNNING.node` names it (for the check of the events it emits).
"""
from __future__ import annotations

import time
import types
from concurrent.futures import Executor
from typing import Any, List, Tuple

from ._flow import Flow, Node, Suspended, discard
from ._listeners import RUNNING
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
    suspended: List[Tuple[int, Suspended]] = []
    perf = time.perf_counter
    i = -1
    outer = getattr(RUNNING, "node", None)  # a task run from inside another's middleware
    t = perf()
    try:
        for node in nodes:
            i += 1
            RUNNING.node = node
            gen = node.fn(ctx)
            if type(gen) is _Gen:
                if next(gen, _DONE) is _DONE:  # returned before any yield
                    gen = None
                if gen is not None or pending:
                    suspended.append((i, Suspended(node.name, gen, pending[:] or None)))
                    pending.clear()
            elif pending:
                suspended.append((i, Suspended(node.name, None, pending[:])))
                pending.clear()
            now = perf()
            totals[i] += now - t
            counts[i] += 1
            t = now
    except BaseException as exc:
        exc.add_note(where(nodes, i, "before its yield"))
        discard(pending, exc)
        pending.clear()
        discard([s for _, s in suspended], exc)
        raise
    finally:
        RUNNING.node = outer
    backward(flow, nodes, suspended, totals)


def backward(flow: Flow, nodes: List[Node], suspended: List[Tuple[int, Suspended]],
             totals: List[float]) -> None:
    """Run the post-`yield` parts of `suspended`, last first."""
    perf = time.perf_counter
    outer = getattr(RUNNING, "node", None)
    resume = flow.resume
    t = perf()
    i = -1
    try:
        while suspended:
            i, item = suspended.pop()
            RUNNING.node = nodes[i]
            resume(item)
            now = perf()
            totals[i] += now - t
            t = now
    except BaseException as exc:
        exc.add_note(where(nodes, i, "after its yield"))
        discard([s for _, s in suspended], exc)
        raise
    finally:
        RUNNING.node = outer


def iterate_async(executor: Executor, flow: Flow, ctx: Any, nodes: List[Node],
                  deps: List[Tuple[int, ...]], counts: List[int], totals: List[float]) -> None:
    """Run the forward parts as a dataflow graph on `executor`, then the post-`yield` parts."""
    suspended, errors = run_graph(executor, flow, nodes, deps, ctx, counts, totals)
    if errors:
        j, first = errors[0]
        first.add_note(where(nodes, j, "before its yield", ", in a worker thread"))
        for k, other in errors[1:]:
            first.add_note(f"middleware {nodes[k].name!r} also failed in this iteration: {other!r}")
        discard([s for _, s in suspended], first)
        raise first
    backward(flow, nodes, suspended, totals)
