"""`rlpipe trainer`'s command line, without a cluster: words in any order, and one line for what
does not go together."""
from __future__ import annotations

import subprocess
import sys

import pytest

from rlpipe.cli import _parser
from rlpipe.training import train
from rlpipe.training import resume


@pytest.mark.parametrize("argv, entry, resume_dir", [
    (["trainer", "tmrl", "--address", "H:1", "cartpole-dqn", "--set", "seed=1"], "cartpole-dqn", None),
    (["trainer", "tmrl", "cartpole-dqn", "--address", "H:1"], "cartpole-dqn", None),
    (["trainer", "tmrl", "--address", "H:1", "--resume", "runs/tmrl"], None, "runs/tmrl"),
])
def test_the_entry_may_follow_options_and_is_left_out_with_resume(argv, entry, resume_dir):
    args = _parser().parse_args(argv)
    assert (args.hub, args.name, args.resume, args.address) == ("tmrl", entry, resume_dir, "H:1")


def run_cli(*words: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rlpipe.cli", *words], capture_output=True,
                          text=True, timeout=60)


def test_a_trainer_without_entry_or_resume_names_both():
    done = run_cli("trainer", "tmrl", "--address", "127.0.0.1:1")
    assert done.returncode == 2
    assert "name the zoo entry to train" in done.stderr and "--resume RUN_DIR" in done.stderr


def test_a_resumed_trainer_refuses_a_new_run_folder():
    done = run_cli("trainer", "tmrl", "--resume", "runs/x", "--run-dir", "elsewhere")
    assert done.returncode == 2 and "drop --run-dir" in done.stderr


def test_resume_on_a_hub_takes_no_collectors(tmp_path):
    run_dir = str(tmp_path / "run")
    train("cartpole-dqn", seed=0, max_env_step=300, run_dir=run_dir, progress=False,
          overrides=["policy.collect.random_collect_size=64", "replay.min_samples=64",
                     "env.stop_value=1e9"])
    with pytest.raises(ValueError, match="takes its collectors from `rlpipe worker`"):
        resume(run_dir, hub="tmrl", collectors=2)
