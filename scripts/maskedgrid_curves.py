"""Train maskedgrid-dqn and maskedgrid-ppo with and without action masks over a few seeds and
draw their eval curves into docs/img/maskedgrid-curves.png (the figure of docs/action_masks.md).

    python scripts/maskedgrid_curves.py [--root /tmp/maskedgrid-runs] [--seeds 3] [--steps 15000]

Runs go on to the full budget (env.stop_value is set out of reach) so every curve spans it.
"""
from __future__ import annotations

import argparse
import dataclasses
import pathlib
from typing import List

from rlpipe.cli import main as cli
from rlpipe.tools.figures import save_figure
from rlpipe.tools.plot import curves, draw_curves

OUT = pathlib.Path(__file__).resolve().parent.parent / "docs" / "img" / "maskedgrid-curves.png"


def train_all(root: pathlib.Path, seeds: int, steps: int) -> dict:
    """Run folders per label: '<entry>' with masks, '<entry> (no mask)' without."""
    groups: dict = {}
    for entry in ("maskedgrid-dqn", "maskedgrid-ppo"):
        for expose in (True, False):
            label = entry if expose else f"{entry} (no mask)"
            for seed in range(seeds):
                run_dir = root / f"{entry}-{'mask' if expose else 'nomask'}-{seed}"
                code = cli(["train", entry, "--run-dir", str(run_dir), "--overwrite",
                            "--no-progress", "--seed", str(seed), "--max-env-steps", str(steps),
                            "--set", "env.stop_value=2",
                            "--set", f"env.env_kwargs.expose_mask={expose}"])
                if code != 0:
                    raise SystemExit(f"training {label} seed {seed} failed (exit {code})")
                groups.setdefault(label, []).append(str(run_dir))
    return groups


def draw(groups: dict, out: pathlib.Path) -> pathlib.Path:
    """Eval and training return: one line (mean and 95% band over seeds) per label."""
    drawn: List = []
    for label, paths in groups.items():
        drawn += [dataclasses.replace(curve, label=label) for curve in curves(paths)]
    return save_figure(draw_curves(drawn), str(out))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="/tmp/maskedgrid-runs")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=15_000)
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    print(draw(train_all(pathlib.Path(args.root), args.seeds, args.steps), pathlib.Path(args.out)))
