"""Make the figures of docs/quickstart.md with the commands the page shows.

    python scripts/quickstart_figures.py [--env-steps 20000] [--seeds 3]

Trains cartpole-dqn with seeds 0..N-1 (in parallel, `--no-progress`) into a temporary folder,
then runs `rlpipe plot` on them and `rlpipe graph cartpole-dqn`, writing
docs/img/curves-cartpole-dqn.png and docs/img/graph-cartpole-dqn.png.
"""
from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"


def rlpipe(*args: str, cwd: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rlpipe.cli", *args], cwd=cwd)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-steps", type=int, default=20_000)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    IMG.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rlpipe-quickstart-") as tmp:
        runs = [f"runs/seed-{s}" for s in range(args.seeds)]
        jobs = [rlpipe("train", "cartpole-dqn", "--seed", str(s), "--max-env-steps",
                       str(args.env_steps), "--run-dir", run, "--no-progress", cwd=tmp)
                for s, run in enumerate(runs)]
        if any(job.wait() != 0 for job in jobs):
            print("a training run failed", file=sys.stderr)
            return 1
        for command in (["plot", *runs, "--out", str(IMG / "curves-cartpole-dqn.png")],
                        ["graph", "cartpole-dqn", "--out", str(IMG / "graph-cartpole-dqn.png")]):
            if rlpipe(*command, cwd=tmp).wait() != 0:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
