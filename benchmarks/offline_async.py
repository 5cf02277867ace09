"""Offline --async against sync on one entry: wall time, the evaluation time taken off the
trainer, and whether the final weights are the same.

    nice .venv/bin/python benchmarks/offline_async.py                       # pendulum-td3bc
    nice .venv/bin/python benchmarks/offline_async.py --entry pendulum-cql --rounds 2

Writes the rounds to async-ENTRY-FIRST-first.json in --workdir.

Uses the data set of `benchmarks/offline.py` (its --workdir; run that first, or pass
--workdir where `pendulum/medium-replay-v0` was made). Each round runs the entry sync then
--async (same seed), alternating the order between rounds so that the machine's load falls on
both alike, and prints per run: wall time, the evaluator's share of the sync run (its
middleware's total time in the profile), the learner's profile overlap (middleware time / wall
time), and the async / sync wall-time ratio measured in the same round.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Dict

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from rlpipe.middleware import load_checkpoint  # noqa: E402
from rlpipe.runs import RunDir  # noqa: E402
from rlpipe.training import train  # noqa: E402


def one(entry: str, seed: int, async_mode: bool, run_dir: Path) -> Dict[str, Any]:
    if run_dir.exists():
        shutil.rmtree(run_dir)
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        s = train(entry, seed=seed, async_mode=async_mode, run_dir=str(run_dir), progress=False)
    wall = time.perf_counter() - start
    profile = s["profile"]
    evaluator_s = sum(m.total_s for m in profile.middleware if "evaluator" in m.name)
    return dict(mode="async" if async_mode else "sync", wall=wall, ret=s["eval_value"],
                final_eval_iter=s["final_eval_iter"], evaluator_s=evaluator_s,
                overlap=profile.overlap, steps_per_s=s["train_iter"] / wall)


def same_weights(a: Path, b: Path) -> bool:
    wa, wb = (load_checkpoint(RunDir(str(d)).final)["policy"] for d in (a, b))
    return all(torch.equal(wa[net][k], wb[net][k]) for net in wa
               if isinstance(wa[net], dict) for k in wa[net]
               if isinstance(wa[net][k], torch.Tensor))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entry", default="pendulum-td3bc")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--first", choices=("sync", "async"), default="sync",
                        help="which mode runs first in round 0 (the order alternates)")
    parser.add_argument("--workdir", default="benchmarks/results/offline/pendulum")
    args = parser.parse_args()
    work = Path(args.workdir).absolute()
    os.environ["MINARI_DATASETS_PATH"] = str(work / "minari")
    os.chdir(work)
    rows = []
    for r in range(args.rounds):
        order = (False, True) if (r % 2 == 0) == (args.first == "sync") else (True, False)
        got = {}
        for async_mode in order:
            run_dir = Path(f"runs/async-bench-{'async' if async_mode else 'sync'}")
            got[async_mode] = one(args.entry, args.seed, async_mode, run_dir)
            print(json.dumps(got[async_mode]), flush=True)
        same = same_weights(Path("runs/async-bench-sync"), Path("runs/async-bench-async"))
        ratio = got[True]["wall"] / got[False]["wall"]
        rows.append(dict(round=r, ratio=ratio, same_final_weights=same, sync=got[False],
                         async_run=got[True]))
        print(f"round {r}: async / sync wall time {ratio:.2f} (sync {got[False]['wall']:.0f} s, "
              f"of which its evaluator {got[False]['evaluator_s']:.0f} s; async "
              f"{got[True]['wall']:.0f} s), learner overlap sync {got[False]['overlap']:.2f} / "
              f"async {got[True]['overlap']:.2f}, same final weights: {same}", flush=True)
    (work / f"async-{args.entry}-{args.first}-first.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
