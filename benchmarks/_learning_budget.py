"""Train one zoo entry for a budget, draw its learning curve with `rlpipe plot`, and print the
env steps/s it ran at beside the published figure for the entry's full budget (issue #18).

Shared by benchmarks/atari_learning.py and benchmarks/mujoco_learning.py (not atari.py and
mujoco.py: a script's folder is on sys.path, and benchmarks/mujoco.py shadowed the real
`mujoco` package in every process that put benchmarks/ there, tests included); each gives its table of entries.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import time
from typing import Dict, Iterable, Mapping, Tuple

import torch

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from rlpipe.envs._registry import resolve_env  # noqa: E402
from rlpipe.envs._manager import resolve_mode  # noqa: E402
from rlpipe.zoo import get_entry  # noqa: E402
from rlpipe.training import train  # noqa: E402

# entry -> (published score, its budget in env steps, where it is published)
Published = Mapping[str, Tuple[float, int, str]]


def parse(description: str, entries: Iterable[str], default_entry: str,
          default_budget: int) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--entry", default=default_entry, choices=sorted(entries))
    parser.add_argument("--budget", type=int, default=default_budget,
                        help="env steps to train (Atari: 4 frames each)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="benchmarks/results/learning",
                        help="folder for the run folder, the curve PNG and a JSON line")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        help="config overrides as `rlpipe train --set`, e.g. env.n_envs=4")
    return parser.parse_args()


def backend(env_cfg) -> str:
    """The env backend the run used, as `EnvManager` resolves its mode: EnvPool, or gymnasium's
    envs in that mode (for an Atari short name in mode "auto": EnvPool where it is installed,
    one process per env otherwise)."""
    mode = resolve_mode(env_cfg.mode, resolve_env(env_cfg.id), env_cfg.n_envs)
    return "envpool" if mode == "envpool" else f"gymnasium ({mode})"


def run(args: argparse.Namespace, published: Published) -> Dict[str, object]:
    """Train `args.entry` for `args.budget` env steps; write the curve; print and return the
    figures (JSON line appended to OUT/results.jsonl)."""
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_dir = out / f"{args.entry}-{args.budget}-s{args.seed}-{stamp}"
    cfg = get_entry(args.entry).resolve({"max_env_step": args.budget}, args.overrides)
    start = time.perf_counter()
    summary = train(args.entry, seed=args.seed, max_env_step=args.budget, run_dir=str(run_dir),
                    progress=False, overrides=args.overrides)
    wall = time.perf_counter() - start
    png = out / f"{run_dir.name}.png"
    subprocess.run([sys.executable, "-m", "rlpipe.cli", "plot", str(run_dir), "--out", str(png)],
                   check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    score, full_budget, source = published[args.entry]
    row = {
        "entry": args.entry, "seed": args.seed, "budget": args.budget,
        "env_step": summary["env_step"], "train_iter": summary["train_iter"],
        "best_eval": summary["best_eval_value"], "last_eval": summary["eval_value"],
        "wall_s": round(wall, 1), "env_steps_per_s": round(summary["env_step"] / wall, 1),
        "env_mode": backend(cfg.env), "learner_device": str(cfg.policy.device),
        "cuda": torch.cuda.is_available(), "machine": f"{platform.node()} ({os.cpu_count()} cpus)",
        "published": score, "published_budget": full_budget, "published_source": source,
        "curve": str(png), "overrides": list(args.overrides),
    }
    with open(out / "results.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")
    print(f"{args.entry} seed {args.seed}: {summary['env_step']:,} env steps in {wall:.0f} s "
          f"= {row['env_steps_per_s']} env steps/s (env: {row['env_mode']}, learner on "
          f"{'cuda' if torch.cuda.is_available() else 'cpu'})")
    print(f"  best eval {summary['best_eval_value']:.1f}, last eval {summary['eval_value']:.1f} "
          f"after {summary['env_step']:,} env steps")
    print(f"  published: {score:,} after {full_budget:,} env steps ({source})")
    print(f"  curve: {png}")
    return row
