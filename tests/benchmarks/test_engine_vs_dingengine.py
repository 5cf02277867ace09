"""benchmarks/engine_vs_dingengine.py: rlpipe's half runs here; DI-engine's needs its own venv,
so only the way its absence is reported is tested."""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "engine_vs_dingengine.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def test_the_rlpipe_half_times_the_task_and_the_plain_loop():
    done = run("--side", "rlpipe", "--iterations", "300", "--repeats", "2")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["side"] == "rlpipe" and result["iterations"] == 300
    # (the half also checks that run(max_step=N) ran N iterations, and fails otherwise)
    assert result["plain_s"] > 0 and result["task_s"] > 0


@pytest.mark.skipif(importlib.util.find_spec("ding") is not None,
                    reason="DI-engine is importable here, so its half would not fail")
def test_an_interpreter_without_dingengine_is_named_in_one_line():
    done = run("--dingengine", sys.executable, "--iterations", "100", "--repeats", "1",
               "--rounds", "1")
    assert done.returncode != 0
    message = done.stderr.strip().splitlines()[-1]
    assert "dingengine half" in message and sys.executable in message
    assert "from ding.framework import task" in message


def test_a_baseline_folder_without_rlpipe_is_refused(tmp_path):
    done = run("--dingengine", sys.executable, "--baseline", str(tmp_path))
    assert done.returncode != 0
    assert "no rlpipe package there" in done.stderr and "git archive" in done.stderr
