"""Compare two groups of parity runs over the whole learning curve, in both directions.

A group is `TASK:FRAMEWORK` of a runs.jsonl written by parity.py. For every evaluation point the
IQM of one group is set against the other's 95% stratified-bootstrap interval (rliable), both
ways, as parity.py's report does for rlpipe against SB3. Two groups that differ only in their
random draws (e.g. SB3 run twice at the same settings) give the count that chance gives, the
reference for reading a report's "below at k of 20 points".

Run:  python benchmarks/parity_compare.py dqn-cartpole-20k:sb3 dqn-cartpole-20k-eps-step:sb3
      python benchmarks/parity_compare.py dqn-cartpole-20k:rlpipe dqn-cartpole-20k:sb3 --seeds 10-19
"""
from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Dict, List, Optional

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _parity_report import iqm_intervals, load_runs, points_verdict  # noqa: E402
from parity import parse_seeds  # noqa: E402


def group_curves(runs: List[Dict], spec: str, seeds: Optional[List[int]]) -> np.ndarray:
    """Seeds × evaluation points of the runs of `spec` ("task:framework")."""
    task, sep, framework = spec.partition(":")
    if not sep:
        raise SystemExit(f"{spec!r}: give a group as TASK:FRAMEWORK, e.g. dqn-cartpole-20k:sb3")
    chosen = sorted((r for r in runs if r["task"] == task and r["framework"] == framework
                     and (seeds is None or r["seed"] in seeds)), key=lambda r: r["seed"])
    if not chosen:
        known = sorted({f"{r['task']}:{r['framework']}" for r in runs})
        raise SystemExit(f"no runs of {spec!r} (seeds {seeds or 'all'}); recorded: {', '.join(known)}")
    lengths = {len(r["curve"]) for r in chosen}
    if len(lengths) != 1:
        raise SystemExit(f"{spec}: the runs have curves of different lengths {sorted(lengths)}")
    return np.array([[c[2] for c in r["curve"]] for r in chosen])


def compare(a: np.ndarray, b: np.ndarray, reps: int) -> Dict[str, str]:
    """`points_verdict` of A's IQM curve against B's band and of B's against A's."""
    if a.shape[1] != b.shape[1]:
        raise SystemExit(f"the groups have {a.shape[1]} and {b.shape[1]} evaluation points")
    point, interval = iqm_intervals({"a": a, "b": b}, reps)
    return {"a_vs_b": points_verdict(point["a"], *interval["b"]),
            "b_vs_a": points_verdict(point["b"], *interval["a"])}


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", help="TASK:FRAMEWORK")
    parser.add_argument("b", help="TASK:FRAMEWORK")
    parser.add_argument("--runs", default=str(HERE / "results" / "parity" / "runs.jsonl"))
    parser.add_argument("--seeds", default=None, help="only these seeds, e.g. 0-9 (default all)")
    parser.add_argument("--reps", type=int, default=5000, help="bootstrap resamples")
    args = parser.parse_args(argv)
    runs = load_runs(pathlib.Path(args.runs))
    seeds = parse_seeds(args.seeds) if args.seeds else None
    a, b = group_curves(runs, args.a, seeds), group_curves(runs, args.b, seeds)
    result = compare(a, b, args.reps)
    print(f"{args.a} ({len(a)} seeds) vs {args.b}'s interval: {result['a_vs_b']}")
    print(f"{args.b} ({len(b)} seeds) vs {args.a}'s interval: {result['b_vs_a']}")


if __name__ == "__main__":
    main()
