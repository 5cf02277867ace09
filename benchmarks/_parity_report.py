"""The parity report: IQM with 95% stratified-bootstrap intervals (rliable) per task and framework,
of the return at fixed fractions of the budget and of the area under the learning curve, wall
times side by side (Markdown), and the learning curves (PNG).

The area under the curve is the mean of the evaluated returns over all evaluation points (the
curve's average height), so it is in return units and comparable with the returns beside it.
"""
from __future__ import annotations

import json
import pathlib
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from _parity_tasks import ParityTask
from rlpipe.tools.report import interval_cell, rliable_modules

FRACTIONS = (0.25, 0.5, 1.0)  # budgets reported, as fractions of the task's budget
FRAMEWORKS = ("rlpipe", "sb3")


def load_runs(path: pathlib.Path) -> List[Dict[str, Any]]:
    """The run records of `path` (JSON lines)."""
    if not path.exists():
        raise SystemExit(f"no results at {path}: run benchmarks/parity.py without --report-only "
                         f"first, or pass the --out folder that holds runs.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def point_index(task: ParityTask, fraction: float) -> int:
    """Index of the first evaluation point at or beyond `fraction` of the budget."""
    points = task.points()
    target = fraction * task.budget
    return next(i for i, p in enumerate(points) if p >= target - 1e-9)


def score_matrix(task: ParityTask, runs: List[Dict[str, Any]]) -> np.ndarray:
    """Runs × (return at each of FRACTIONS, AUC)."""
    rows = []
    for run in runs:
        returns = np.array([c[2] for c in run["curve"]])
        rows.append([returns[point_index(task, f)] for f in FRACTIONS] + [returns.mean()])
    return np.array(rows)


def iqm_intervals(scores: Dict[str, np.ndarray], reps: int) -> Tuple[Dict, Dict]:
    """Per framework: the IQM of each column and its 95% stratified-bootstrap interval. The
    bootstrap is seeded, so a report rewritten from the same runs gives the same intervals (a
    point at an interval's edge would otherwise flip between rewrites)."""
    rly, metrics = rliable_modules()  # the error names the extra when rliable is missing

    def per_column_iqm(x: np.ndarray) -> np.ndarray:
        return np.array([metrics.aggregate_iqm(x[:, j]) for j in range(x.shape[1])])

    # rliable's StratifiedBootstrap draws its resamples from numpy's global RNG (whatever
    # random_state it is given): seed that for the call and give the caller its state back.
    saved = np.random.get_state()
    np.random.seed(0)
    try:
        return rly.get_interval_estimates(scores, per_column_iqm, reps=reps)
    finally:
        np.random.set_state(saved)


def paired_ratio(ours: List[Dict[str, Any]], theirs: List[Dict[str, Any]],
                 key: str = "wall_time") -> float:
    """Median over seeds of rlpipe's `key` ("wall_time", "cpu_time") / SB3's for the same seed.
    The two runs of a seed run back to back, so a change in the machine's load mostly cancels
    in their ratio. Over the seeds both sides have; NaN when there are none."""
    sb3 = {r["seed"]: r.get(key) for r in theirs}
    ratios = [r[key] / sb3[r["seed"]] for r in ours if r.get(key) and sb3.get(r["seed"])]
    return float(np.median(ratios)) if ratios else float("nan")


def _verdict(ours: float, lo: float, hi: float) -> str:
    if ours > hi:
        return "above"
    return "inside" if ours >= lo else "**below**"


def points_verdict(ours: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> str:
    """How rlpipe's IQM curve lies against SB3's 95% band over every evaluation point, e.g.
    "below at 1 of 20 points (25,000), above at 2, inside at 17". A single point below, with
    neighbours inside or above, reads as evaluation noise; a run of them as a gap."""
    verdicts = [_verdict(o, low, high).strip("*") for o, low, high in zip(ours, lo, hi)]
    return (f"below at {verdicts.count('below')} of {len(verdicts)} points, above at "
            f"{verdicts.count('above')}, inside at {verdicts.count('inside')}")


def task_table(task: ParityTask, runs: List[Dict[str, Any]], reps: int) -> Tuple[str, Dict]:
    """The Markdown table of one task and the per-point curve estimates for the plot."""
    by_fw = {fw: sorted((r for r in runs if r["framework"] == fw), key=lambda r: r["seed"])
             for fw in FRAMEWORKS}
    by_fw = {fw: rs for fw, rs in by_fw.items() if rs}
    if not by_fw:
        return f"### {task.name}\n\nno runs recorded.\n", {}
    scores = {fw: score_matrix(task, rs) for fw, rs in by_fw.items()}
    point, interval = iqm_intervals(scores, reps)
    curves = {fw: np.array([[c[2] for c in r["curve"]] for r in rs]) for fw, rs in by_fw.items()}
    curve_point, curve_interval = iqm_intervals(curves, reps)
    walls = {fw: float(np.median([r["wall_time"] for r in rs])) for fw, rs in by_fw.items()}
    # returns on a scale of a few units (MiniGrid's 0–1) keep two decimals, the others one
    small = max(abs(c[2]) for rs in by_fw.values() for r in rs for c in r["curve"]) <= 10
    digits = 2 if small else 1

    heads = [f"IQM return @ {int(f * task.budget):,} steps" for f in FRACTIONS] + ["IQM AUC"]
    lines = [f"### {task.name} ({task.algo.upper()} {task.env_id}, {task.budget:,} env steps)",
             "",
             "| framework | seeds | " + " | ".join(heads) + " | loop wall time / run (median; "
             "rlpipe: median per-seed ratio) |",
             "|---|---|" + "---|" * len(heads) + "---|"]
    for fw, rs in by_fw.items():
        cells = [interval_cell(point[fw][j], interval[fw][0][j], interval[fw][1][j], digits)
                 for j in range(len(heads))]
        wall = f"{walls[fw]:.1f} s"
        if fw == "rlpipe" and "sb3" in walls:
            wall += f" ({paired_ratio(by_fw['rlpipe'], by_fw['sb3']):.2f}× SB3)"
        lines.append(f"| {fw} | {len(rs)} | " + " | ".join(cells) + f" | {wall} |")
    if set(by_fw) == set(FRAMEWORKS):
        verdicts = [_verdict(point["rlpipe"][j], interval["sb3"][0][j], interval["sb3"][1][j])
                    for j in range(len(heads))]
        lines.append("| rlpipe vs SB3's interval | | " + " | ".join(verdicts) + " | |")
    finals = {fw: ", ".join(f"{r['final']:.{2 if small else 0}f}" for r in rs)
              for fw, rs in by_fw.items()}
    lines += [""] + [f"- final returns, {fw} (seeds {rs[0]['seed']}…{rs[-1]['seed']}): {finals[fw]}"
                     for fw, rs in by_fw.items()]
    if set(by_fw) == set(FRAMEWORKS):
        # runs recorded before the harness kept CPU time have none: the CPU line counts the
        # runs that have it, and the ratio the seeds where both sides have it
        timed = {fw: [r for r in rs if r.get("cpu_time")] for fw, rs in by_fw.items()}
        pairs = {r["seed"] for r in timed["rlpipe"]} & {r["seed"] for r in timed["sb3"]}
        if pairs:
            cpu_ratio = paired_ratio(timed["rlpipe"], timed["sb3"], "cpu_time")
            cpu = {fw: float(np.median([r["cpu_time"] for r in rs])) for fw, rs in timed.items()}
            every = all(len(timed[fw]) == len(by_fw[fw]) for fw in FRAMEWORKS)
            some = "" if every else (f" of the runs that recorded it, rlpipe "
                                     f"{len(timed['rlpipe'])} and SB3 {len(timed['sb3'])}")
            lines.append(f"- loop CPU time per run (this process's; median{some}): rlpipe "
                         f"{cpu['rlpipe']:.1f} s, SB3 {cpu['sb3']:.1f} s; median per-seed ratio "
                         f"{cpu_ratio:.2f}× SB3" + ("" if every else f" ({len(pairs)} seeds)"))
        below = [f"{p:,}" for p, o, low in zip(task.points(), curve_point["rlpipe"],
                                               curve_interval["sb3"][0]) if o < low]
        lines.append("- every evaluation point, rlpipe's IQM vs SB3's interval: " + points_verdict(
            curve_point["rlpipe"], *curve_interval["sb3"]) + (f" (below at {', '.join(below)} "
                                                              "steps)" if below else ""))
    return "\n".join(lines) + "\n", dict(point=curve_point, interval=curve_interval)


def plot_curves(tasks: Sequence[ParityTask], estimates: Dict[str, Dict], path: pathlib.Path) -> None:
    """One panel per task: the IQM curve of each framework with its 95% interval as a band."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [t for t in tasks if estimates.get(t.name)]
    if not shown:
        return
    cols = min(3, len(shown))
    rows = (len(shown) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    colors = {"rlpipe": "tab:blue", "sb3": "tab:orange"}
    for ax, task in zip(axes.flat, shown):
        est = estimates[task.name]
        x = np.array(task.points())
        for fw, y in est["point"].items():
            lo, hi = est["interval"][fw]
            ax.plot(x, y, color=colors[fw], label=fw)
            ax.fill_between(x, lo, hi, color=colors[fw], alpha=0.2)
        ax.set_title(task.name, fontsize=9)
        ax.set_xlabel("env steps", fontsize=8)
        ax.set_ylabel("IQM greedy return", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(shown):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def write_report(tasks: Sequence[ParityTask], out: pathlib.Path, reps: int = 5000) -> str:
    """Write `out/report.md` and `out/curves.png` from `out/runs.jsonl`; return the Markdown."""
    runs = load_runs(out / "runs.jsonl")
    parts = ["IQM with 95% stratified-bootstrap intervals (rliable, "
             f"{reps} resamples); AUC = mean greedy return over the evaluation points.", ""]
    estimates = {}
    for task in tasks:
        table, est = task_table(task, [r for r in runs if r["task"] == task.name], reps)
        parts.append(table)
        estimates[task.name] = est
    report = "\n".join(parts)
    (out / "report.md").write_text(report)
    plot_curves(tasks, estimates, out / "curves.png")
    return report
