"""Shared helpers of the fault-injection suite: a small trained run folder, file damage, the CLI."""
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SMALL = ["policy.collect.random_collect_size=256", "replay.min_samples=256",
         "policy.eval.evaluator.n_episode=2", "policy.eval.evaluator.eval_freq=64",
         "policy.learn.update_per_collect=16", "policy.model.hidden=(32, 32)",
         "env.stop_value=1e9", "ckpt.train_freq=32"]


def truncate(path: Path) -> None:
    """Cut `path` to half its length (a copy or a disk that gave up half-way)."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def flip(path: Path) -> None:
    """Flip one byte in the middle of `path` (bit rot)."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


DAMAGE = {"truncated": truncate, "flipped": flip}


def newest_resumable(run_dir: Path) -> str:
    """The checkpoint latest.json names (the one resume takes when nothing is wrong)."""
    return json.loads((run_dir / "ckpt" / "latest.json").read_text())["file"]


def cli_subprocess(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`python -m rlpipe.cli ARGS` with this checkout first on the path (and the test key)."""
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run([sys.executable, "-m", "rlpipe.cli", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=str(REPO))
