"""rlpipe's torch thread policy (rlpipe/_threads.py): one intra-op thread in every command and in
any script that imports rlpipe, unless RLPIPE_NUM_THREADS, OMP_NUM_THREADS or
rlpipe.set_num_threads says otherwise. Each case runs in a fresh interpreter, since the count is
set once per process."""
import os
import subprocess
import sys

import pytest

from rlpipe.cli import main

BUILD_POLICY = """
import gymnasium as gym
from rlpipe.policies import DQNPolicy
DQNPolicy({}, gym.spaces.Box(-1.0, 1.0, (4,)), gym.spaces.Discrete(2))
"""
PRINT_THREADS = "\nimport torch\nprint(torch.get_num_threads())\n"


def _threads(script: str, **env: str) -> int:
    """torch.get_num_threads() at the end of `script`, run with `env` on top of an environment
    that names no thread count."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("RLPIPE_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", script + PRINT_THREADS], capture_output=True,
                          text=True, env={**base, **env}, check=False)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip().splitlines()[-1])


def test_a_script_that_builds_a_policy_runs_torch_on_one_thread():
    assert _threads("import rlpipe" + BUILD_POLICY) == 1


def test_torch_imported_before_rlpipe_gets_one_thread_at_import_rlpipe():
    assert _threads("import torch\ntorch.set_num_threads(2)\nimport rlpipe\n") == 1


def test_import_rlpipe_alone_does_not_import_torch():
    script = "import sys\nimport rlpipe\nassert 'torch' not in sys.modules\n"
    assert _threads(script + "import rlpipe.models\n") == 1


@pytest.mark.parametrize("env", [{"RLPIPE_NUM_THREADS": "3"},
                                 {"OMP_NUM_THREADS": "2", "RLPIPE_NUM_THREADS": "3"}])
def test_rlpipe_num_threads_overrides_the_default(env):
    assert _threads("import rlpipe" + BUILD_POLICY, **env) == 3


def test_omp_num_threads_is_left_as_torch_read_it():
    # torch caps OMP_NUM_THREADS at the cores it may use: compare with torch on its own
    assert _threads("import rlpipe" + BUILD_POLICY, OMP_NUM_THREADS="2") == \
        _threads("", OMP_NUM_THREADS="2")


def test_set_num_threads_before_torch_waits_and_wins_over_the_environment():
    script = "import rlpipe\nrlpipe.set_num_threads(3)" + BUILD_POLICY
    assert _threads(script, RLPIPE_NUM_THREADS="2") == 3


def test_a_torch_call_after_rlpipe_set_its_count_stands():
    script = ("import torch\nimport rlpipe.models\ntorch.set_num_threads(3)\n"
              "import rlpipe.middleware" + BUILD_POLICY)
    assert _threads(script) == 3


def test_a_bad_count_is_refused_with_how_to_fix_it():
    import rlpipe

    with pytest.raises(ValueError, match=r"positive whole number.*set_num_threads\(4\)"):
        rlpipe.set_num_threads(0)
    done = subprocess.run([sys.executable, "-c", "import rlpipe.models"], capture_output=True,
                          text=True, env={**os.environ, "RLPIPE_NUM_THREADS": "many"})
    assert "RLPIPE_NUM_THREADS='many': give a positive whole number" in done.stderr


def test_rlpipe_eval_runs_on_one_thread(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert main(["train", "cartpole-dqn", "--max-env-steps", "256", "--run-dir", str(run_dir),
                 "--no-progress", "--set", "policy.collect.random_collect_size=128",
                 "--set", "replay.min_samples=128",
                 "--set", "policy.eval.evaluator.n_episode=1"]) == 0
    capsys.readouterr()
    script = (f"from rlpipe.cli import main\n"
              f"assert main(['eval', {str(run_dir)!r}, '--episodes', '1']) == 0\n")
    assert _threads(script) == 1
    assert _threads(script, RLPIPE_NUM_THREADS="3") == 3
