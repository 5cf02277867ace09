"""`rlpipe report RUN...`: aggregate metrics of final evaluation returns, as a paper reports them.

Runs are grouped by zoo entry (their config.json) and seed; a folder of `rlpipe train --seeds`
stands for its `seed-*` runs. A run's score is its final evaluation return (the last
`eval/return_mean` of metrics.jsonl), optionally normalised per entry, (x - min) / (max - min).
For each entry, rliable gives the IQM, mean, median and optimality gap (the mean shortfall below
a threshold) over its seeds (rliable's median is the median over tasks of each task's mean score:
with one task per entry it equals the mean), with 95% stratified-bootstrap intervals (percentile method; one
task per entry, so the strata are that task's runs). Written: `report.md` (a Markdown table,
then each run's score) and `report.png` (an interval plot: a bar per entry per metric spanning
its interval, a tick at the point estimate).
"""
from __future__ import annotations

import dataclasses
import math
import pathlib
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from rlpipe.runs import RunDir

from rlpipe.zoo.registry import MissingDependencyError

METRICS = ("IQM", "mean", "median", "optimality gap")
PANEL_INCHES, ROW_INCHES, BASE_INCHES, DPI = 3.2, 0.5, 1.3, 100
"""The PNG: PANEL_INCHES wide per metric, BASE_INCHES + ROW_INCHES per entry high, at DPI."""


def rliable_modules() -> Tuple[Any, Any]:
    """(rliable.library, rliable.metrics), or MissingDependencyError naming the extra."""
    try:
        from rliable import library, metrics
    except ImportError as err:
        raise MissingDependencyError(f"rlpipe report computes its intervals with rliable, which "
                                     f"is missing or broken ({err}); install it with: pip install "
                                     f"\"rlpipe[report]\" (rliable with arch>=8)") from err
    return library, metrics


def interval_cell(value: float, lo: float, hi: float, digits: int = 1) -> str:
    """`value [lo, hi]`, the way every rlpipe table shows an estimate and its interval."""
    return f"{value:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


@dataclasses.dataclass(frozen=True)
class ScoredRun:
    """A run folder, its entry, seed and final evaluation return."""

    path: pathlib.Path
    entry: str
    seed: Any
    final_return: float


def expand_runs(paths: Sequence[str]) -> List[pathlib.Path]:
    """The run folders named by `paths`: each a run (it has config.json) or a `--seeds` folder
    (its seed-* runs); anything else is a ValueError naming it."""
    if not paths:
        raise ValueError("name at least one run folder")
    out: List[pathlib.Path] = []
    for text in paths:
        path = pathlib.Path(text)
        if not path.is_dir():
            raise ValueError(f"{text!r}: no such folder; pass run folders that `rlpipe train` "
                             f"printed, or the folder of a `train --seeds`")
        seeds = sorted(p for p in path.glob("seed-*") if RunDir(p).config.is_file())
        if RunDir(path).config.is_file():
            out.append(path)
        elif seeds:
            out += seeds
        else:
            raise ValueError(f"{text!r} is not a run folder (it has no config.json), nor a "
                             f"folder of `train --seeds` runs (no seed-*/config.json in it)")
    return out


def score_run(path: pathlib.Path) -> Tuple[ScoredRun, Dict[str, Any]]:
    """The run's final eval return (and its config); ValueError when it has no evaluation."""
    from rlpipe.middleware import read_metrics

    entry, cfg = RunDir(path).read_config()
    metrics = RunDir(path).metrics
    rows = read_metrics(metrics) if metrics.is_file() else []
    finals = [r["eval/return_mean"] for r in rows
              if isinstance(r.get("eval/return_mean"), (int, float))
              and math.isfinite(r["eval/return_mean"])]
    if not finals:
        raise ValueError(f"{str(path)!r}: the run has no evaluation return in {metrics.name} "
                         f"yet; report it once it has evaluated")
    return ScoredRun(path, entry, cfg.get("seed"), float(finals[-1])), cfg


def parse_normalize(items: Sequence[str]) -> Dict[str, Tuple[float, float]]:
    """`ENTRY=MIN:MAX` items → {entry: (min, max)}."""
    out = {}
    for item in items:
        entry, _, bounds = item.partition("=")
        low, _, high = bounds.partition(":")
        try:
            lo, hi = float(low), float(high)
        except ValueError:
            raise ValueError(f"--normalize {item!r}: write ENTRY=MIN:MAX, e.g. "
                             f"--normalize cartpole-dqn=0:500") from None
        if not entry or hi <= lo:
            raise ValueError(f"--normalize {item!r}: needs an entry and MAX > MIN")
        out[entry] = (lo, hi)
    return out


def group_runs(paths: Sequence[str]) -> Tuple[Dict[str, List[ScoredRun]], Dict[str, Any]]:
    """Runs by entry (each sorted by seed) and each entry's env.stop_value; a seed given twice
    for one entry is an error naming both folders."""
    groups: Dict[str, List[ScoredRun]] = {}
    stop_values: Dict[str, Any] = {}
    for path in expand_runs(paths):
        run, cfg = score_run(path)
        twin = next((r for r in groups.get(run.entry, []) if r.seed == run.seed), None)
        if twin is not None:
            raise ValueError(f"{run.entry} seed {run.seed} is given twice ({twin.path} and "
                             f"{run.path}): pass one run per entry and seed")
        groups.setdefault(run.entry, []).append(run)
        stop_values[run.entry] = (cfg.get("env") or {}).get("stop_value")
    for runs in groups.values():
        runs.sort(key=lambda r: (str(type(r.seed)), r.seed))
    return groups, stop_values


def metric_fn(threshold: Optional[float]) -> Callable[[np.ndarray], np.ndarray]:
    """The function rliable bootstraps: scores (runs × tasks) → the METRICS (gap NaN when no
    threshold is known)."""
    _, metrics = rliable_modules()

    def aggregate(scores: np.ndarray) -> np.ndarray:
        gap = math.nan if threshold is None else metrics.aggregate_optimality_gap(scores, threshold)
        return np.array([metrics.aggregate_iqm(scores), metrics.aggregate_mean(scores),
                         metrics.aggregate_median(scores), gap])
    return aggregate


@dataclasses.dataclass(frozen=True)
class EntryEstimate:
    entry: str
    runs: List[ScoredRun]
    scores: np.ndarray  # runs × 1, normalised where asked
    normalized: bool
    threshold: Optional[float]
    point: np.ndarray  # one per METRICS
    interval: np.ndarray  # 2 × len(METRICS)


def _bootstrap(library: Any, key: str, scores: np.ndarray, fn: Callable, reps: int,
               seed: int) -> Tuple[Dict, Dict]:
    """rliable's estimates, reproducible: rliable 1.2 draws its resampled runs from NumPy's
    global generator (not from the `random_state` it takes), so that is seeded with `seed` for
    the call and then put back as it was."""
    saved = np.random.get_state()
    np.random.seed(seed)
    try:
        with warnings.catch_warnings():  # arch 8 deprecates the RandomState rliable passes on
            warnings.filterwarnings("ignore", "random_state is deprecated", FutureWarning)
            return library.get_interval_estimates({key: scores}, fn, reps=reps,
                                                  random_state=np.random.RandomState(seed))
    finally:
        np.random.set_state(saved)


def estimate(paths: Sequence[str], normalize: Sequence[str] = (), gap_threshold: Optional[float]
             = None, reps: int = 2000, seed: int = 0) -> List[EntryEstimate]:
    """Per entry: its scores and rliable's point and 95% interval estimates of the METRICS
    (each entry's bootstrap seeded with `seed`)."""
    if reps < 100:
        raise ValueError(f"--reps {reps}: use at least 100 bootstrap resamples (2000 is usual)")
    library, _ = rliable_modules()
    groups, stop_values = group_runs(paths)
    bounds = parse_normalize(normalize)
    unknown = sorted(set(bounds) - set(groups))
    if unknown:
        raise ValueError(f"--normalize names {', '.join(unknown)}, which no run given belongs "
                         f"to (entries: {', '.join(sorted(groups))})")
    out = []
    for entry, runs in groups.items():
        scores = np.array([[r.final_return] for r in runs])
        if entry in bounds:
            lo, hi = bounds[entry]
            scores = (scores - lo) / (hi - lo)
        threshold = gap_threshold
        if threshold is None:
            threshold = 1.0 if entry in bounds else stop_values.get(entry)
        threshold = None if threshold is None else float(threshold)
        point, interval = _bootstrap(library, entry, scores, metric_fn(threshold), reps, seed)
        out.append(EntryEstimate(entry, runs, scores, entry in bounds, threshold, point[entry],
                                 interval[entry]))
    return out


def markdown(estimates: Sequence[EntryEstimate], reps: int) -> str:
    """The table (one row per entry), then each run's score."""
    lines = [f"Final evaluation return per run; point estimate [95% stratified-bootstrap "
             f"interval] over seeds (rliable, {reps} resamples).", "",
             "| entry | runs | score | " + " | ".join(METRICS) + " | gap threshold |",
             "|---|---|---|" + "---|" * len(METRICS) + "---|"]
    for e in estimates:
        digits = 3 if e.normalized else 1
        cells = [interval_cell(e.point[j], e.interval[0][j], e.interval[1][j], digits)
                 if math.isfinite(e.point[j]) else "n/a" for j in range(len(METRICS))]
        score = "normalised" if e.normalized else "return"
        threshold = "none (set --gap-threshold)" if e.threshold is None else f"{e.threshold:g}"
        lines.append(f"| {e.entry} | {len(e.runs)} | {score} | " + " | ".join(cells) +
                     f" | {threshold} |")
    lines.append("")
    for e in estimates:
        finals = ", ".join(f"seed {r.seed}: {r.final_return:.2f}" for r in e.runs)
        lines.append(f"- {e.entry}: {finals}")
    return "\n".join(lines) + "\n"


def draw(estimates: Sequence[EntryEstimate]) -> Any:
    """The interval plot: a panel per metric, a row per entry (bar = interval, tick = point)."""
    from .figures import require_matplotlib

    require_matplotlib("rlpipe report")
    from matplotlib.figure import Figure
    height = BASE_INCHES + ROW_INCHES * len(estimates)
    fig = Figure(figsize=(PANEL_INCHES * len(METRICS), height), layout="constrained")
    axes = fig.subplots(1, len(METRICS), sharey=True)
    for j, (ax, name) in enumerate(zip(axes, METRICS)):
        for k, e in enumerate(estimates):
            lo, hi = e.interval[0][j], e.interval[1][j]
            if not math.isfinite(e.point[j]):
                continue
            ax.barh(k, max(hi - lo, 1e-9), left=lo, height=0.6, color=f"C{k % 10}", alpha=0.75)
            ax.vlines(e.point[j], k - 0.3, k + 0.3, color="k")
        ax.set_title(name)
        ax.set_yticks(range(len(estimates)), [e.entry for e in estimates])
        ax.grid(alpha=0.3, axis="x")
        ax.margins(x=0.15)
        ax.set_xlabel("normalised score" if all(e.normalized for e in estimates) else "score")
    return fig


def write_report(paths: Sequence[str], out: Optional[str] = None,
                 normalize: Sequence[str] = (), gap_threshold: Optional[float] = None,
                 reps: int = 2000, seed: int = 0) -> Tuple[str, List[pathlib.Path]]:
    """Write `out`/report.md and `out`/report.png for run folders `paths` (default `out`:
    report/ in the folder the runs share, see `beside_runs`); return the Markdown and the
    files."""
    from .figures import beside_runs, save_figure

    folder = pathlib.Path(out if out is not None else beside_runs(paths, "report"))
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--out {out!r} is a file: name a folder for report.md and report.png")
    estimates = estimate(paths, normalize, gap_threshold, reps, seed)
    folder.mkdir(parents=True, exist_ok=True)
    text = markdown(estimates, reps)
    table = folder / "report.md"
    table.write_text(text, encoding="utf-8")
    png = save_figure(draw(estimates), str(folder / "report.png"), dpi=DPI)
    return text, [table, png]
