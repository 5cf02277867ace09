"""The async scheduler: one iteration's forward parts as a dataflow graph on a thread pool.

A middleware is submitted as soon as every earlier middleware it conflicts with has finished
(see `dependencies`). After a failure no further middleware is submitted, and every one already
running is waited for before the errors are handed back: no future is dropped.
"""
from __future__ import annotations

import queue
import time
from concurrent.futures import Executor
from typing import Any, List, Optional, Sequence, Tuple

from ._contract import Contract
from ._flow import Flow, Node, Suspended
from ._listeners import running

Done = Tuple[int, Optional[Suspended], Optional[BaseException], float]


def run_graph(executor: Executor, flow: Flow, nodes: List[Node], deps: List[Tuple[int, ...]],
              ctx: Any, counts: List[int], totals: List[float]
              ) -> Tuple[List[Tuple[int, Suspended]], List[Tuple[int, BaseException]]]:
    """Run the pre-`yield` parts of `nodes`; return (suspended by position, errors by position).

    `counts`/`totals` are updated from this (the scheduling) thread only.
    """
    n = len(nodes)
    waiting = [len(d) for d in deps]
    dependents: List[List[int]] = [[] for _ in range(n)]
    for j, d in enumerate(deps):
        for i in d:
            dependents[i].append(j)
    done: "queue.SimpleQueue[Done]" = queue.SimpleQueue()
    ready = [j for j in range(n) if waiting[j] == 0]
    results: List[Optional[Suspended]] = [None] * n
    errors: List[Tuple[int, BaseException]] = []
    running = 0
    while True:
        if not errors:
            for j in ready:
                executor.submit(_run_node, flow, j, nodes[j], ctx, done)
                running += 1
        ready = []
        if running == 0:
            break
        j, item, error, seconds = done.get()
        running -= 1
        totals[j] += seconds
        counts[j] += 1
        if error is not None:
            errors.append((j, error))
            continue
        results[j] = item
        for k in dependents[j]:
            waiting[k] -= 1
            if waiting[k] == 0:
                ready.append(k)
        ready.sort()
    return [(j, s) for j, s in enumerate(results) if s is not None], errors


def _run_node(flow: Flow, j: int, node: Node, ctx: Any, done: "queue.SimpleQueue[Done]") -> None:
    started = time.perf_counter()
    slot = running()
    slot.node = node  # this worker thread runs `node` (the check of the events it emits)
    try:
        item = flow.enter(node.fn, ctx, node.name)
    except BaseException as exc:  # handed to the scheduling thread, re-raised there
        done.put((j, None, exc, time.perf_counter() - started))
        return
    finally:
        slot.node = None
    done.put((j, item, None, time.perf_counter() - started))


def dependencies(contracts: Sequence[Optional[Contract]]) -> List[Tuple[int, ...]]:
    """For each middleware, the earlier ones it must wait for in async mode.

    j waits for i < j when i writes what j reads, reads what j writes, or writes what j writes;
    an undeclared middleware waits for, and is waited for by, every other one.
    """
    deps = []
    for j, later in enumerate(contracts):
        deps.append(tuple(
            i for i in range(j)
            if later is None or contracts[i] is None or contracts[i].conflicts_with(later)
        ))
    return deps
