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


@pytest.mark.slow
def test_ppo_mode_prints_rlpipe_over_sb3_measured_in_the_same_run():
    pytest.importorskip("minigrid")
    pytest.importorskip("stable_baselines3")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "dict_obs_throughput.py"),
                           "--ppo", "--net", "mlp", "--rollouts", "1", "--rounds", "1"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    sb3 = re.search(r"^SB3 MultiInputPolicy\s+(\d+\.\d+)\s+1\.00$", done.stdout, re.M)
    ours = re.search(r"^rlpipe, net mlp\s+(\d+\.\d+)\s+(\d+\.\d+)$", done.stdout, re.M)
    assert sb3 and ours, done.stdout
    assert float(sb3.group(1)) > 0
    ratio = float(ours.group(1)) / float(sb3.group(1))
    assert abs(float(ours.group(2)) - ratio) < 0.02  # the figures are printed rounded


@pytest.mark.slow
def test_ppo_collect_mode_prints_each_part_of_collection():
    """--ppo-collect prints MiniGrid's steps, the env manager's, the collect forward between
    env steps and alone (min <= median), and the manager's median overhead over MiniGrid."""
    pytest.importorskip("minigrid")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "dict_obs_throughput.py"),
                           "--ppo-collect", "--net", "mlp", "--rounds", "3"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    for part in ("minigrid", "manager", "forward", "forward alone"):
        row = re.search(rf"^  {part}\s+(\d+)\s+(\d+)$", done.stdout, re.M)
        assert row, done.stdout
        assert 0 < int(row.group(1)) <= int(row.group(2))
    assert re.search(r"^  manager - minigrid median -?\d+$", done.stdout, re.M), done.stdout
