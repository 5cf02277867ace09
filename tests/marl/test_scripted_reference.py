"""benchmarks/marl_scripted.py, the hand-written simple_spread references the docs quote: it
runs, and a coordinated split of the landmarks beats a fixed one, which beats each agent
heading for its nearest landmark (which still beats random actions, ≈ −84)."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mpe2")

ROOT = Path(__file__).resolve().parents[2]


def test_scripted_references_rank_by_coordination():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "marl_scripted.py"),
                           "--episodes", "16"], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    rows = dict(re.findall(r"^\| (nearest|by-id|assigned) \| (-?[\d.]+) ±", done.stdout, re.M))
    assert set(rows) == {"nearest", "by-id", "assigned"}, done.stdout
    team = {mode: float(value) for mode, value in rows.items()}
    assert team["assigned"] > team["by-id"] > team["nearest"] > -70, team
