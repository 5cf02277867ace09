"""The benchmark scripts the docs quote still run (their --quick modes) and print their figures."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NUMBER = r"[\d,.]+"


def run(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert done.returncode == 0, f"{script} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.slow
def test_env_throughput_prints_a_ratio_for_every_mode():
    out = run("env_throughput.py", "--quick")
    row = rf"^(sync|async|native)\s+(\d+)\s+{NUMBER}\s+{NUMBER}\s+(\d+\.\d+)"
    rows = re.findall(row, out, re.M)
    assert {(mode, int(n)) for mode, n, _ in rows} == {
        ("sync", 1), ("sync", 8), ("sync", 64), ("async", 2), ("async", 4),
        ("native", 1), ("native", 8), ("native", 64),
    }
    assert all(float(ratio) > 0 for *_, ratio in rows)


@pytest.mark.slow
def test_buffer_and_collect_benchmarks_print_their_figures():
    out = run("buffer.py", "--quick")
    assert re.search(rf"^uniform, CartPole.*?{NUMBER}\s+{NUMBER}", out, re.M)
    out = run("collect_throughput.py", "--quick")
    assert re.search(rf"^sync\s+8\s+{NUMBER}\s+{NUMBER}\s+\d+\.\d+", out, re.M)
    assert re.search(rf"^native\s+64\s+{NUMBER}\s+{NUMBER}\s+\d+\.\d+", out, re.M)


@pytest.mark.slow
def test_recurrent_acting_benchmark_prints_its_ratio():
    out = run("recurrent_acting.py", "--quick", "--rounds", "1")
    assert re.search(rf"^\s+8\s+{NUMBER}\s+{NUMBER}\s+\d+\.\d+", out, re.M)
