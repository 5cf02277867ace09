"""Sample-efficiency parity with Stable-Baselines3 at matched settings (issue #21).

For each task (algorithm × env × budget, `_parity_tasks.TASKS`) and seed, trains rlpipe and SB3
with the same rl-zoo hyperparameters, alternating which framework goes first from seed to seed,
and records per run the greedy learning curve, the final return and the training-loop wall time
(`_parity_runs`). Every finished run is appended to `OUT/runs.jsonl` at once, so an interrupted
benchmark continues where it stopped when rerun with the same OUT. The report (`_parity_report`)
gives per task the IQM with 95% stratified-bootstrap intervals (rliable) of the return at fixed
fractions of the budget and of the area under the curve, with wall times, as `OUT/report.md`,
and the curves as `OUT/curves.png`.

Needs the [bench] extra (stable-baselines3, sb3-contrib) and the [report] extra (rliable).

Run:  python benchmarks/parity.py --tasks dqn-cartpole-20k --seeds 0-9 --out results/parity
      python benchmarks/parity.py --quick            # 2 seeds, tiny budgets, < 90 s
      python benchmarks/parity.py --list             # the tasks and the settings table
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
from typing import Dict, Iterable, List, Set, Tuple

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _parity_report import write_report  # noqa: E402
from _parity_runs import FRAMEWORKS, run_one  # noqa: E402
from _parity_settings import settings_markdown  # noqa: E402
from _parity_tasks import QUICK, TASKS, ParityTask  # noqa: E402


def parse_seeds(text: str) -> List[int]:
    """"0-9" → 0..9, "0,3,5" → [0, 3, 5], "4" → [4]."""
    seeds: List[int] = []
    for part in text.split(","):
        lo, sep, hi = part.partition("-")
        try:
            seeds += list(range(int(lo), int(hi) + 1)) if sep else [int(lo)]
        except ValueError:
            raise SystemExit(f"--seeds {text!r}: {part!r} is not a seed or a range like 0-9")
    return seeds


def select_tasks(names: Iterable[str], table: Dict[str, ParityTask]) -> List[ParityTask]:
    tasks = []
    for name in names:
        if name not in table:
            raise SystemExit(f"--tasks: no task {name!r}; known: {', '.join(table)}")
        tasks.append(table[name])
    return tasks


def check_requirements(tasks: List[ParityTask]) -> None:
    """Fail before any run when SB3, rliable or an env's extra is missing."""
    import importlib.util
    needs = {"stable_baselines3": "pip install -e '.[bench]'",
             "rliable": "pip install -e '.[report]'"}
    needs.update({t.requires: f"the env {t.env_id} needs it: pip install -e '.[{t.requires.lower()}]'"
                  for t in tasks if t.requires})
    missing = [f"{mod} ({how})" for mod, how in needs.items()
               if importlib.util.find_spec(mod) is None]
    if missing:
        raise SystemExit("parity.py: missing " + "; ".join(missing))


def done_runs(path: pathlib.Path) -> Set[Tuple[str, str, int]]:
    """(task, framework, seed) of the runs already recorded in `path`."""
    if not path.exists():
        return set()
    keys = set()
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SystemExit(f"{path}:{n} is not JSON ({exc}); delete that line (an "
                                 f"interrupted write) and rerun") from exc
            keys.add((rec["task"], rec["framework"], int(rec["seed"])))
    return keys


def run_all(tasks: List[ParityTask], seeds: List[int], out: pathlib.Path) -> None:
    """Every missing (task, seed, framework) run, alternating frameworks, appended as it ends."""
    out.mkdir(parents=True, exist_ok=True)
    runs_file = out / "runs.jsonl"
    done = done_runs(runs_file)
    for task in tasks:
        for seed in seeds:
            order = FRAMEWORKS if seed % 2 == 0 else FRAMEWORKS[::-1]
            for framework in order:
                if (task.name, framework, seed) in done:
                    continue
                start = time.perf_counter()
                record = run_one(framework, task, seed)
                with runs_file.open("a") as f:
                    f.write(json.dumps(record) + "\n")
                print(f"{task.name:22s} {framework:6s} seed {seed:3d}: final {record['final']:8.1f}"
                      f"  loop {record['wall_time']:6.1f} s  ({time.perf_counter() - start:.0f} s)",
                      flush=True)


def main(argv: List[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=None,
                        help=f"task names (default: dqn-cartpole-20k); known: {', '.join(TASKS)}")
    parser.add_argument("--seeds", default=None, help="e.g. 0-9 or 0,2,4 (default 0-9)")
    parser.add_argument("--out", default=None, help="results folder (default results/parity)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny budgets, 2 seeds: checks the harness, numbers mean nothing")
    parser.add_argument("--report-only", action="store_true",
                        help="write the report from OUT/runs.jsonl without training")
    parser.add_argument("--list", action="store_true", help="print the settings table and exit")
    args = parser.parse_args(argv)

    table = QUICK if args.quick else TASKS
    if args.list:
        print(settings_markdown())
        print("\ntasks:", ", ".join(table))
        return
    tasks = select_tasks(args.tasks or ([*QUICK] if args.quick else ["dqn-cartpole-20k"]), table)
    seeds = parse_seeds(args.seeds or ("0-1" if args.quick else "0-9"))
    out = pathlib.Path(args.out or ("results/parity-quick" if args.quick else "results/parity"))
    check_requirements(tasks)
    if not args.report_only:
        run_all(tasks, seeds, out)
    report = write_report(tasks, out, reps=500 if args.quick else 5000)
    print(report)
    print(f"wrote {out / 'report.md'} and {out / 'curves.png'}")


if __name__ == "__main__":
    main()
