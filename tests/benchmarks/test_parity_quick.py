"""benchmarks/parity.py: the --quick mode runs end to end (so the harness cannot rot), its results
are cached per run, and its helpers parse and index as documented."""
from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "parity.py"
sys.path.insert(0, str(ROOT / "benchmarks"))

import parity  # noqa: E402
from _parity_report import point_index, points_verdict  # noqa: E402
from _parity_runs import eval_seeds  # noqa: E402
from _parity_tasks import QUICK, TASKS  # noqa: E402


def run(*args: str) -> str:
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=400, cwd=ROOT)
    assert done.returncode == 0, f"parity.py failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.slow
def test_quick_mode_writes_both_frameworks_rows_and_curves_and_resumes(tmp_path):
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("rliable.library")
    out = tmp_path / "parity"
    first = run("--quick", "--out", str(out))
    records = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert {(r["task"], r["framework"], r["seed"]) for r in records} == {
        (t, fw, s) for t in QUICK for fw in ("rlpipe", "sb3") for s in (0, 1)}
    for r in records:
        assert len(r["curve"]) == len(QUICK[r["task"]].points())
        assert r["wall_time"] > 0 and r["final"] == r["curve"][-1][2]
    report = (out / "report.md").read_text()
    for name in QUICK:
        section = report.split(f"### {name}")[1].split("###")[0]
        for fw in ("rlpipe", "sb3"):
            row = re.search(rf"^\| {fw} \| 2 \| (.*)\|$", section, re.M)
            assert row, f"no {fw} row for {name}:\n{section}"
            assert len(re.findall(r"-?\d+\.\d \[-?\d+\.\d, -?\d+\.\d\]", row.group(1))) == 4
        assert "× SB3" in section and "rlpipe vs SB3's interval" in section
    png = (out / "curves.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) < 150_000
    assert "seed" in first
    # a second call finds every run cached: no training, the same report
    second = run("--quick", "--out", str(out))
    assert not re.search(r"^\S+\s+(rlpipe|sb3)\s+seed", second, re.M)
    assert len((out / "runs.jsonl").read_text().splitlines()) == len(records)


def test_seed_ranges_and_lists_parse_and_a_bad_one_is_named():
    assert parity.parse_seeds("0-3") == [0, 1, 2, 3]
    assert parity.parse_seeds("0,5,7-8") == [0, 5, 7, 8]
    with pytest.raises(SystemExit, match="'x' is not a seed"):
        parity.parse_seeds("1,x")


def test_unknown_task_names_the_known_ones():
    with pytest.raises(SystemExit, match="no task 'dqn-nope'.*dqn-cartpole-20k"):
        parity.select_tasks(["dqn-nope"], TASKS)


def test_a_torn_line_in_the_cache_is_reported_with_its_line_number(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(dict(task="t", framework="sb3", seed=3)) + "\n{\"task\": \"t\"")
    with pytest.raises(SystemExit, match=r"runs.jsonl:2 is not JSON"):
        parity.done_runs(path)
    path.write_text(json.dumps(dict(task="t", framework="sb3", seed=3)) + "\n")
    assert parity.done_runs(path) == {("t", "sb3", 3)}


def test_every_task_the_issue_names_exists_with_matched_budgets():
    assert {"dqn-cartpole-20k", "dqn-cartpole-50k", "dqn-lunarlander-100k", "ppo-cartpole-50k",
            "ppo-lunarlander-1m", "sac-pendulum-10k", "td3-pendulum-10k", "sac-hopper-100k",
            "td3-hopper-100k"} <= set(TASKS)
    for task in TASKS.values():
        assert task.rlpipe["max_env_step"] == task.budget
        assert task.points()[-1] == task.budget
        if task.algo == "dqn" and not task.defaults:  # ε decays over the same env steps
            decay = task.rlpipe["policy"]["other"]["eps"]["decay"]
            assert task.sb3["exploration_fraction"] * task.budget == pytest.approx(decay)


def test_the_per_step_eps_task_differs_from_the_20k_task_only_in_per_env_step():
    base, step = TASKS["dqn-cartpole-20k"], TASKS["dqn-cartpole-20k-eps-step"]
    assert step.sb3 == base.sb3 and step.points() == base.points()
    rlpipe = copy.deepcopy(step.rlpipe)
    assert rlpipe["policy"]["other"]["eps"].pop("per_env_step") is True
    assert rlpipe == base.rlpipe  # per_env_step absent from the base task: False, the default


def test_budget_fractions_pick_the_first_point_at_or_past_them():
    task = TASKS["dqn-cartpole-20k"]  # points 1000, 2000, ..., 20000
    assert [task.points()[point_index(task, f)] for f in (0.25, 0.5, 1.0)] == [5000, 10000, 20000]


def test_eval_seeds_are_shared_by_both_frameworks_and_differ_between_runs():
    assert eval_seeds(3, 2) == eval_seeds(3, 2)
    assert not set(eval_seeds(0, 10)) & set(eval_seeds(1, 10))


def test_the_docs_show_the_settings_table_the_harness_uses():
    from _parity_settings import settings_markdown
    assert settings_markdown() in (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")


def test_points_verdict_counts_where_the_curve_leaves_the_reference_band():
    import numpy as np
    lo, hi = np.array([0.0, 0.0, 0.0, 0.0]), np.array([10.0, 10.0, 10.0, 10.0])
    assert points_verdict(np.array([-1.0, 5.0, 11.0, 0.0]), lo, hi) == \
        "below at 1 of 4 points, above at 1, inside at 2"
    assert points_verdict(np.array([5.0] * 4), lo, hi) == "below at 0 of 4 points, above at 0, inside at 4"


def test_compare_counts_points_both_ways_and_names_a_missing_group():
    pytest.importorskip("rliable.library")
    import numpy as np
    from parity_compare import compare, group_curves
    rng = np.random.default_rng(0)
    a = rng.normal(100.0, 5.0, size=(10, 4))
    result = compare(a, a - 50.0, reps=200)
    assert result == {"a_vs_b": "below at 0 of 4 points, above at 4, inside at 0",
                      "b_vs_a": "below at 4 of 4 points, above at 0, inside at 0"}
    runs = [dict(task="t", framework="sb3", seed=s, curve=[[1, 1, 1.0]]) for s in range(3)]
    assert group_curves(runs, "t:sb3", [0, 2]).shape == (2, 1)
    with pytest.raises(SystemExit, match="no runs of 't:rlpipe'.*recorded: t:sb3"):
        group_curves(runs, "t:rlpipe", None)


def test_the_report_intervals_are_the_same_on_every_rewrite():
    pytest.importorskip("rliable.library")
    import numpy as np
    from _parity_report import iqm_intervals
    scores = {"x": np.random.default_rng(1).normal(size=(10, 3))}
    first, second = iqm_intervals(scores, 300)[1], iqm_intervals(scores, 300)[1]
    np.testing.assert_array_equal(first["x"], second["x"])
