"""`rlpipe train ENTRY --seeds 0-4 [--jobs K]`: one run per seed, K at a time, then a table.

Each seed is its own `rlpipe train ... --seed S --run-dir D` child process (the rest of the
command line as given), so a seed that fails or crashes loses nothing of the others; its error
line is named in the summary. Folders: `<parent>/seed-<S>/`, the parent being `--run-dir` or
a new `runs/<name>/<timestamp>/` (`rlpipe report` and `rlpipe plot` take that folder
for its seeds). Each child gets `cpu_count // jobs` threads.
"""
from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Sequence

_DROPPED = {"--seeds": 1, "--jobs": 1, "--run-dir": 1, "--seed": 1, "--no-progress": 0}


def parse_seeds(text: str) -> List[int]:
    """`0-4` → [0, 1, 2, 3, 4]; `1,5,9` → [1, 5, 9]; the two may be mixed (`0-2,7`)."""
    seeds: List[int] = []
    try:
        for part in text.split(","):
            lo, dash, hi = part.strip().partition("-")
            first, last = int(lo), int(hi) if dash else int(lo)
            if last < first:
                raise ValueError
            seeds += range(first, last + 1)
    except ValueError:
        raise ValueError(f"--seeds {text!r}: give a range or a list of seeds >= 0, e.g. "
                         f"--seeds 0-4 or --seeds 1,5,9") from None
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds {text!r} names a seed twice")
    return seeds


def child_argv(argv: Sequence[str]) -> List[str]:
    """`argv` without the options `--seeds` sets per child (each with its value)."""
    out: List[str] = []
    skip = 0
    for word in argv:
        if skip:
            skip -= 1
            continue
        name = word.split("=", 1)[0]
        if name in _DROPPED:
            skip = _DROPPED[name] if "=" not in word else 0
            continue
        out.append(word)
    return out


@dataclasses.dataclass
class SeedRun:
    """One seed's outcome: its folder, the JSON summary of its `rlpipe train` (None when it
    failed), its exit code and, on failure, the last line it wrote to stderr."""

    seed: int
    run_dir: str
    code: Optional[int] = None
    summary: Optional[Dict[str, Any]] = None
    error: str = ""
    wall_time: float = 0.0


def _run_one(argv: List[str], run: SeedRun, threads: int) -> SeedRun:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    command = [sys.executable, "-m", "rlpipe.cli", *argv, "--seed", str(run.seed),
               "--run-dir", run.run_dir, "--no-progress"]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    run.wall_time = time.perf_counter() - start
    run.code = done.returncode
    lines = done.stdout.strip().splitlines()
    if done.returncode == 0 and lines:
        try:
            run.summary = json.loads(lines[-1])
        except json.JSONDecodeError:
            run.error = f"its last line of output is not the JSON summary: {lines[-1][:120]}"
    else:
        errors = [x for x in done.stderr.strip().splitlines() if x.strip()]
        run.error = errors[-1] if errors else f"exit code {done.returncode}, no message"
    (pathlib.Path(run.run_dir).parent / f"seed-{run.seed}.stderr.txt").write_text(done.stderr)
    return run


def parent_folder(name: str, run_dir: Optional[str]) -> pathlib.Path:
    """Where the seeds' folders go: `run_dir` (created), else a new runs/<name>/<timestamp>/."""
    if run_dir:
        path = pathlib.Path(run_dir)
        path.mkdir(parents=True, exist_ok=True)
        return path
    from .create import new_run_dir

    return pathlib.Path(new_run_dir(name))


def run_seeds(argv: Sequence[str], seeds: Sequence[int], jobs: Optional[int],
              name: Optional[str], run_dir: Optional[str]) -> List[SeedRun]:
    """Train one run per seed, `jobs` at a time (default: the CPU count, at most one per
    seed); return every seed's outcome, failed ones included."""
    cpus = os.cpu_count() or 1
    jobs = jobs or cpus
    if jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {jobs}")
    jobs = min(jobs, len(seeds))
    parent = parent_folder(name, run_dir)
    argv = child_argv(argv)
    runs = [SeedRun(s, str(parent / f"seed-{s}")) for s in seeds]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(lambda r: _run_one(argv, r, max(1, cpus // jobs)), runs))
    return runs


def _ret(value: Any) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_table(runs: Sequence[SeedRun]) -> str:
    """The summary table: per seed its final and best eval return, env steps, wall time and
    folder; a failed seed's row says so and names its error."""
    head = f"{'seed':>5}  {'final':>9}  {'best':>9}  {'env steps':>9}  {'wall s':>7}  run folder"
    lines = [head]
    for r in runs:
        if r.summary is not None:
            s = r.summary
            lines.append(f"{r.seed:>5}  {_ret(s.get('eval_value')):>9}  "
                         f"{_ret(s.get('best_eval_value')):>9}  {str(s.get('env_step')):>9}  "
                         f"{r.wall_time:>7.1f}  {r.run_dir}")
        else:
            lines.append(f"{r.seed:>5}  FAILED (exit {r.code}): {r.error}")
    failed = [r.seed for r in runs if r.summary is None]
    if failed:
        lines.append(f"{len(failed)} of {len(runs)} seeds failed: {', '.join(map(str, failed))} "
                     f"(their stderr: {pathlib.Path(runs[0].run_dir).parent}/seed-<S>.stderr.txt)")
    return "\n".join(lines)


def json_line(runs: Sequence[SeedRun]) -> str:
    """The last line of stdout: per seed its summary, or its error."""
    return json.dumps({"seeds": [dict(seed=r.seed, run_dir=r.run_dir, exit_code=r.code,
                                      summary=r.summary, error=r.error or None) for r in runs]})
