"""Per-iteration cost of the Task with 5 no-op middleware, beside a plain Python loop.

    .venv/bin/python benchmarks/engine_overhead.py [--iterations 20000] [--repeats 5]

Prints microseconds per iteration for: a plain loop calling the same 5 functions; the same loop
plus `ctx = ctx.renew()` (which the Task does every iteration); `Task.run` in sync mode; and in
async mode. "Overhead per middleware call" is (task - plain) / 5. Best of `--repeats` runs.

The same again for 5 generator middleware (`def mw(ctx): yield`, DI-engine's onion form): the
plain loop runs each to its `yield` in order and then finishes them in reverse, as the Task does.
"""
from __future__ import annotations

import argparse
import time
from typing import Callable, List

from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import Task, contract

N_MIDDLEWARE = 5


def make_middleware(generator: bool = False) -> List[Callable]:
    fns = []
    for k in range(N_MIDDLEWARE):
        if generator:
            @contract()
            def noop(ctx):
                yield
        else:
            @contract()
            def noop(ctx) -> None:
                return None
        noop.__name__ = noop.__qualname__ = f"noop{k}"
        fns.append(noop)
    return fns


def plain_loop(fns: List[Callable], n: int, renew: bool) -> float:
    ctx = OnlineRLContext()
    start = time.perf_counter()
    for _ in range(n):
        for fn in fns:
            fn(ctx)
        if renew:
            ctx = ctx.renew()
    return time.perf_counter() - start


def plain_generator_loop(fns: List[Callable], n: int, renew: bool) -> float:
    """Each generator to its `yield` in order, then each finished, last first."""
    ctx = OnlineRLContext()
    start = time.perf_counter()
    for _ in range(n):
        gens = []
        for fn in fns:
            gen = fn(ctx)
            next(gen)
            gens.append(gen)
        for gen in reversed(gens):
            next(gen, None)
        if renew:
            ctx = ctx.renew()
    return time.perf_counter() - start


def task_run(fns: List[Callable], n: int, async_mode: bool) -> float:
    task = Task()
    with task.start(async_mode=async_mode):
        for fn in fns:
            task.use(fn)
        start = time.perf_counter()
        task.run(max_step=n)
        return time.perf_counter() - start


def best(measure: Callable[[], float], repeats: int) -> float:
    return min(measure() for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20000)
    parser.add_argument("--async-iterations", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    n, n_async, r = args.iterations, args.async_iterations, args.repeats
    us = 1e6
    for kind, generator, loop in (("function", False, plain_loop),
                                  ("generator", True, plain_generator_loop)):
        fns = make_middleware(generator)
        plain = best(lambda: loop(fns, n, renew=False), r) / n * us
        plain_renew = best(lambda: loop(fns, n, renew=True), r) / n * us
        sync = best(lambda: task_run(fns, n, async_mode=False), r) / n * us
        asyn = best(lambda: task_run(fns, n_async, async_mode=True), r) / n_async * us
        print(f"{N_MIDDLEWARE} no-op {kind} middleware, best of {r} runs "
              f"({n} iterations; async {n_async})")
        print(f"{'':34}{'µs/iteration':>14}{'µs/call above plain':>22}"
              f"{'above plain+renew':>20}")
        rows = [("plain loop", plain), ("plain loop + ctx.renew()", plain_renew),
                ("Task.run, sync", sync), ("Task.run, async (thread pool)", asyn)]
        for name, value in rows:
            above = (value - plain) / N_MIDDLEWARE
            above_renew = (value - plain_renew) / N_MIDDLEWARE
            print(f"{name:34}{value:>14.2f}{above:>22.2f}{above_renew:>20.2f}")
        print(f"ctx.renew() alone: {plain_renew - plain:.2f} µs per iteration\n")


if __name__ == "__main__":
    main()
