"""`rlpipe plot`: learning curves of run folders against env steps.

For each run folder, the rows of `metrics.jsonl` give the evaluation return
(`eval/return_mean`) and the collector's training episode return
(`collect/episode_return_mean`) at each logged env step. Runs of one zoo entry (the `entry` of
their `config.json`) form a group: each run is interpolated linearly onto a common grid of env
steps (the range every run of the group covers; no extrapolation), and the group is drawn as the
mean with a 95% Student-t confidence interval of that mean (mean ± t(0.975, n-1)·s/√n over the n
runs) — a t-interval rather than a bootstrap, since a bootstrap of 2-5 seeds understates the
spread. A group of one run draws its line as logged. Groups of different entries get a line
each, in a legend.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from rlpipe.runs import RunDir

EVAL = "eval/return_mean"
TRAIN = "collect/episode_return_mean"
METRICS = {EVAL: "evaluation return", TRAIN: "training episode return"}

# two-sided 95% quantiles of Student's t, t(0.975, df), df = 1..30
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(df: int) -> float:
    """t(0.975, df): the table up to 30 degrees of freedom, then z + (z³ + z)/(4·df)."""
    if df < 1:
        raise ValueError(f"a t-interval needs at least 2 runs (df >= 1), got df={df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    return z + (z ** 3 + z) / (4 * df)


@dataclasses.dataclass(frozen=True)
class Run:
    """A run folder's entry name and its metric series: {metric: (env steps, values)}."""

    path: pathlib.Path
    entry: str
    series: Dict[str, Tuple[np.ndarray, np.ndarray]]


@dataclasses.dataclass(frozen=True)
class Curve:
    """What is drawn for one group and one metric."""

    label: str
    metric: str
    runs: int
    steps: np.ndarray
    mean: np.ndarray
    low: Optional[np.ndarray] = None
    """Lower end of the 95% t-interval (None for a single run)."""
    high: Optional[np.ndarray] = None


def read_run(path: str) -> Run:
    """The metric series of run folder `path`; ValueError when it is not a run or has none yet."""
    from rlpipe.middleware import read_metrics

    folder = pathlib.Path(path)
    if not folder.is_dir():
        raise ValueError(f"{path!r}: no such folder; pass run folders that "
                         f"`rlpipe train` printed (runs/<entry>/<timestamp>/)")
    run = RunDir(folder)
    config = run.config
    if not config.is_file():
        raise ValueError(f"{path!r} is not a run folder (it has no config.json); "
                         f"pass run folders that `rlpipe train` printed (runs/<entry>/<timestamp>/)")
    try:
        entry = json.loads(config.read_text(encoding="utf-8"))["entry"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"{path!r}: {config} is not a run config ({exc!r}); "
                         f"was it written by `rlpipe train`?") from exc
    metrics = run.metrics
    rows = read_metrics(metrics) if metrics.is_file() else []
    series = {}
    for key in METRICS:
        points: Dict[float, float] = {}  # env step (offline: train_iter) -> the last value
        for row in rows:
            value, step = row.get(key), row.get("env_step", row.get("train_iter"))
            if isinstance(value, (int, float)) and isinstance(step, (int, float)) \
                    and math.isfinite(value):
                points[float(step)] = float(value)
        if points:
            steps = np.array(sorted(points))
            series[key] = (steps, np.array([points[s] for s in steps]))
    if not series:
        raise ValueError(f"{path!r}: the run has no metrics yet (no evaluation or "
                         f"training episode return in {metrics.name}); plot it after its first "
                         f"evaluation or finished episode")
    return Run(folder, str(entry), series)


def group_curve(label: str, metric: str, runs: Sequence[Run], points: int = 200) -> Optional[Curve]:
    """Mean and 95% t-interval of `metric` over `runs` on a common env-step grid (None when no
    run logged it, or the runs share no env-step range)."""
    series = [r.series[metric] for r in runs if metric in r.series]
    if not series:
        return None
    if len(series) == 1:
        steps, values = series[0]
        return Curve(label, metric, 1, steps, values)
    lo = max(s[0] for s, _ in series)
    hi = min(s[-1] for s, _ in series)
    if lo > hi:
        return None
    grid = np.linspace(lo, hi, points) if hi > lo else np.array([lo])
    stacked = np.stack([np.interp(grid, s, v) for s, v in series])
    n = len(series)
    mean = stacked.mean(axis=0)
    half = t975(n - 1) * stacked.std(axis=0, ddof=1) / math.sqrt(n)
    return Curve(label, metric, n, grid, mean, mean - half, mean + half)


def curves(paths: Sequence[str], points: int = 200) -> List[Curve]:
    """The curves `rlpipe plot` draws for run folders `paths` (or folders of `train --seeds`):
    per entry, per metric."""
    from .report import expand_runs

    groups: Dict[str, List[Run]] = {}
    for path in expand_runs(paths):  # a `train --seeds` folder stands for its seed-* runs
        run = read_run(str(path))
        groups.setdefault(run.entry, []).append(run)
    out = []
    for entry, runs in groups.items():
        for metric in METRICS:
            curve = group_curve(entry, metric, runs, points)
            if curve is None and sum(metric in r.series for r in runs) > 1:
                raise ValueError(
                    f"the runs of {entry!r} share no env-step range for {metric} "
                    f"({', '.join(str(r.path) for r in runs)}); plot them one at a time")
            if curve is not None:
                out.append(curve)
    return out


def draw_curves(drawn: Sequence[Curve]) -> object:
    """A matplotlib Figure: one panel per metric, a line (and band) per group."""
    from .figures import require_matplotlib

    require_matplotlib("rlpipe plot")
    from matplotlib.figure import Figure
    metrics = [m for m in METRICS if any(c.metric == m for c in drawn)]
    fig = Figure(figsize=(5.2 * len(metrics), 3.6), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    labels = list(dict.fromkeys(c.label for c in drawn))
    colours = {label: f"C{k % 10}" for k, label in enumerate(labels)}
    for ax, metric in zip(axes, metrics):
        for c in (c for c in drawn if c.metric == metric):
            runs = f"{c.runs} runs, mean and 95% CI" if c.runs > 1 else "1 run"
            ax.plot(c.steps, c.mean, color=colours[c.label], lw=1.6, label=f"{c.label} ({runs})")
            if c.low is not None:
                ax.fill_between(c.steps, c.low, c.high, color=colours[c.label], alpha=0.2, lw=0)
        ax.set_title(METRICS[metric])
        ax.set_xlabel("env steps")
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
    return fig


def plot_runs(paths: Sequence[str], out: Optional[str] = None
              ) -> Tuple[List[Curve], pathlib.Path]:
    """Read run folders `paths`, draw their curves to `out` (.png or .svg; default
    curves.png in the folder the runs share, see `beside_runs`); return both."""
    from .figures import beside_runs, check_out, save_figure

    if out is None:
        out = beside_runs(paths, "curves.png")
        if out == os.path.join("runs", "curves.png"):
            os.makedirs("runs", exist_ok=True)
    check_out(out)  # refuse before reading anything
    drawn = curves(paths)
    return drawn, save_figure(draw_curves(drawn), out)
