"""benchmarks/dict_obs_throughput.py still runs (--quick) and prints its ratio."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_dict_obs_throughput_prints_flat_dict_and_ratio():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "dict_obs_throughput.py"),
                           "--quick", "--rounds", "1"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    row = re.search(r"^\s*8\s+([\d,]+)\s+([\d,]+)\s+(\d+\.\d+)$", done.stdout, re.M)
    assert row, done.stdout
    flat, nested = (float(row.group(i).replace(",", "")) for i in (1, 2))
    assert flat > 0 and nested > 0
    assert abs(float(row.group(3)) - nested / flat) < 0.01
