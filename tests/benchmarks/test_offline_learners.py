"""benchmarks/offline_learners.py: a run against a checkout prints one row per learner with
positive CPU times, the speedup they give, the operation counts of both sides and the time of
each side's first step (where a compiled side compiles)."""
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "offline_learners.py"


def test_a_run_against_this_checkout_prints_consistent_rows():
    done = subprocess.run([sys.executable, str(SCRIPT), "--baseline", str(ROOT), "--algos",
                           "td3-bc", "iql", "--rounds", "1", "--steps", "2"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    rows = re.findall(r"^(iql|td3-bc)" + r"\s+(\S+)" * 7 + "$", done.stdout, re.M)
    assert sorted(name for name, *_ in rows) == ["iql", "td3-bc"]
    for name, *figures in rows:
        old, new, speedup, old_ops, new_ops, old_first, new_first = (float(x) for x in figures)
        assert all(math.isfinite(x) and x > 0 for x in (old, new, speedup)), name
        assert speedup == pytest.approx(old / new, abs=0.01), name
        assert old_ops == new_ops > 0, name  # the same code on both sides
        assert old_first >= 0 and new_first >= 0, name


def test_a_baseline_without_rlpipe_is_refused_with_the_fix(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--baseline", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode != 0 and "git worktree add --detach" in done.stderr


def test_the_adam_timing_prints_three_positive_times():
    done = subprocess.run([sys.executable, str(SCRIPT), "--baseline", str(ROOT), "--adam"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    rows = re.findall(r"^(step\(\)|adam_step|compiled step\(\))\s+(\S+) CPU-µs", done.stdout, re.M)
    assert [name for name, _ in rows] == ["step()", "adam_step", "compiled step()"]
    assert all(float(us) > 0 for _, us in rows)
