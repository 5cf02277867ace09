"""benchmarks/recurrent.py --vs-sb3: a one-rollout run of each implementation prints both rows
and a ratio that is the quotient of their env steps per CPU-second."""
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_vs_sb3_prints_both_rows_and_their_ratio():
    pytest.importorskip("sb3_contrib")
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "recurrent.py"), "--vs-sb3", "--seeds", "1",
         "--sb3-steps", "256"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    rows = dict((name, (int(steps), float(rate))) for name, steps, rate in re.findall(
        r"^\s+0 (rlpipe|RecurrentPPO)\s+(\d+)\s+\S+\s+(\d+)\s+\S+$", done.stdout, re.M))
    assert sorted(rows) == ["RecurrentPPO", "rlpipe"], done.stdout
    assert all(steps >= 256 and rate > 0 for steps, rate in rows.values())
    ratio = float(re.search(r"per CPU-second: mean ([\d.]+)×", done.stdout).group(1))
    assert math.isfinite(ratio)
    assert ratio == pytest.approx(rows["rlpipe"][1] / rows["RecurrentPPO"][1], rel=0.05)
