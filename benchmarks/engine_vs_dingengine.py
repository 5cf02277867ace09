"""Generator middleware per call: rlpipe's Task against DI-engine's `task`, in the same run.

    python benchmarks/engine_vs_dingengine.py --dingengine /tmp/dingvenv/bin/python \
        [--iterations 20000] [--repeats 3] [--rounds 6] [--baseline DIR]

DI-engine is not a dependency of rlpipe: its half runs in another interpreter (`--dingengine`,
a venv where `from ding.framework import task` imports), this script's own half in this one.
Each round starts one process per framework, in alternating order (rlpipe first in even rounds,
DI-engine first in odd ones), so that a change of load on the machine falls on both.
`--baseline DIR` adds a third side, "baseline": the rlpipe package found in DIR (e.g. another
commit's, from `git archive COMMIT rlpipe | tar -x -C DIR`), run by this interpreter.

Each process builds 5 middleware `def mw(ctx): yield` and its framework's `OnlineRLContext`
(as DI-engine's pipelines pass it), runs the global task in sync mode (`task.start(ctx=...)`,
`task.use(mw)` five times, `task.run(max_step=N)`: DI-engine's loop of `forward` per middleware,
then `backward`, then `renew`), one short run to warm up, then `--repeats` runs of N iterations,
and reports the least process CPU time (`time.process_time`, all threads) of them. Beside it,
in the same process, the plain loop a Task stands for: each generator to its `yield` in order,
then each finished last first, then `ctx = ctx.renew()`.

Printed per round and side: µs per middleware call (the task's CPU per iteration / 5), and µs
per call above that process's plain loop (what the framework adds to the generators and
its own context's renew). The summary gives each side's best and median over the rounds.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List

N_MIDDLEWARE = 5
SIDES = ("rlpipe", "dingengine", "baseline")


def make_middleware() -> List[Callable[[Any], Any]]:
    fns = []
    for k in range(N_MIDDLEWARE):
        def mw(ctx):
            yield
        mw.__name__ = mw.__qualname__ = f"mw{k}"
        fns.append(mw)
    return fns


def plain_loop(fns: List[Callable[[Any], Any]], ctx: Any, n: int) -> float:
    """CPU seconds of n iterations of what the task does, written out by hand."""
    start = time.process_time()
    for _ in range(n):
        gens = []
        for fn in fns:
            gen = fn(ctx)
            next(gen)
            gens.append(gen)
        for gen in reversed(gens):
            next(gen, None)
        ctx = ctx.renew()
    return time.process_time() - start


def framework(side: str) -> tuple:
    """(the global task, its OnlineRLContext class) of `side`, imported in this process."""
    if side != "dingengine":
        from rlpipe.contexts import OnlineRLContext
        from rlpipe.engine import task
    else:
        from ding.framework import OnlineRLContext, task
    return task, OnlineRLContext


def measure(side: str, n: int, repeats: int) -> Dict[str, float]:
    """This process's side: least CPU seconds over `repeats` runs, task and plain loop."""
    task, context = framework(side)
    fns = make_middleware()
    plain = min(plain_loop(fns, context(), n) for _ in range(repeats + 1))
    runs = []
    with task.start(async_mode=False, ctx=context()):
        for fn in fns:
            task.use(fn)
        for k in range(repeats + 1):  # the first run warms up and is not counted
            # DI-engine's run() leaves finish True after max_step; its next run would stop
            # after one iteration, so clear it (rlpipe's run() clears it itself).
            task.finish = False
            steps = n if k else max(n // 10, 1)
            before = task.ctx.total_step
            start = time.process_time()
            task.run(max_step=steps)
            if k:
                runs.append(time.process_time() - start)
            # `steps` iterations renew the context steps - 1 times (rlpipe's run() renews
            # once more on entry, the context the previous run left being used)
            renewed = task.ctx.total_step - before
            if not steps - 1 <= renewed <= steps:
                raise RuntimeError(f"{side}: run(max_step={steps}) renewed the context "
                                   f"{renewed} times, so it did not run {steps} iterations; "
                                   f"fix how measure() drives this task")
    return {"side": side, "task_s": min(runs), "plain_s": plain, "iterations": n}


def child(args: argparse.Namespace) -> None:
    print(json.dumps(measure(args.side, args.iterations, args.repeats)))


def run_side(python: str, side: str, args: argparse.Namespace) -> Dict[str, float]:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    # rlpipe: this checkout's package, whatever the working directory; baseline: DIR's
    root = {"rlpipe": here, "baseline": args.baseline}.get(side)
    if root:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    argv = [python, os.path.abspath(__file__), "--side", side,
            "--iterations", str(args.iterations), "--repeats", str(args.repeats)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"the {side} half ({python}) failed with exit code {done.returncode}: "
                         f"{done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ''}"
                         f" (for DI-engine, check `{python} -c 'from ding.framework import task'`)")
    return json.loads(done.stdout.strip().splitlines()[-1])


def per_call_us(result: Dict[str, float]) -> tuple:
    calls = result["iterations"] * N_MIDDLEWARE
    return result["task_s"] / calls * 1e6, (result["task_s"] - result["plain_s"]) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dingengine", metavar="PYTHON",
                        help="an interpreter where `from ding.framework import task` imports")
    parser.add_argument("--iterations", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per process (least)")
    parser.add_argument("--rounds", type=int, default=6, help="processes per side, alternating")
    parser.add_argument("--baseline", metavar="DIR",
                        help="also time the rlpipe package in DIR (another commit's)")
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)  # a child process
    args = parser.parse_args()
    if args.side:
        child(args)
        return
    if not args.dingengine:
        parser.error("--dingengine PYTHON is required: the interpreter of a venv with DI-engine "
                     "(see docs/benchmarks.md, 'Generator middleware dispatch')")
    if args.baseline and not os.path.isfile(os.path.join(args.baseline, "rlpipe", "__init__.py")):
        parser.error(f"--baseline {args.baseline}: no rlpipe package there; make one with "
                     f"`git archive COMMIT rlpipe | tar -x -C {args.baseline}`")
    pythons = {"rlpipe": sys.executable, "dingengine": args.dingengine,
               "baseline": sys.executable}
    sides = SIDES if args.baseline else SIDES[:2]
    figures: Dict[str, List[tuple]] = {side: [] for side in sides}
    print(f"{N_MIDDLEWARE} generator middleware, sync, {args.iterations} iterations, least of "
          f"{args.repeats} runs per process; process CPU µs per middleware call")
    print(f"{'round':>5}  {'side':<11}{'per call':>10}{'above plain loop':>18}")
    for r in range(args.rounds):
        order = sides if r % 2 == 0 else sides[::-1]
        for side in order:
            total, above = per_call_us(run_side(pythons[side], side, args))
            figures[side].append((total, above))
            print(f"{r:>5}  {side:<11}{total:>10.2f}{above:>18.2f}", flush=True)
    print("\nover the rounds (best / median), µs per call:")
    for side in sides:
        totals = [t for t, _ in figures[side]]
        aboves = [a for _, a in figures[side]]
        print(f"  {side:<11} per call {min(totals):.2f} / {statistics.median(totals):.2f}"
              f"   above plain loop {min(aboves):.2f} / {statistics.median(aboves):.2f}")
    ratio = (statistics.median(t for t, _ in figures["rlpipe"])
             / statistics.median(t for t, _ in figures["dingengine"]))
    print(f"rlpipe / DI-engine, median per call: {ratio:.2f}")


if __name__ == "__main__":
    main()
