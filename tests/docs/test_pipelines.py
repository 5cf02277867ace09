"""docs/pipelines.md's off-policy script, written out with public API only, trains the same
weights as `rlpipe train cartpole-dqn` at the same seed and budget: every tensor of final.pt's
policy state (networks, optimiser states, counters, RNG state) is equal, and so are the
context's counters."""
import ast
import pathlib
import subprocess
import sys

import torch

from rlpipe.middleware.ckpt import load_checkpoint

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "pipelines.md"


def offpolicy_script() -> str:
    """The doc's first python block: the off-policy pipeline written out."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index("```python\n", text.index("## Off-policy, written out")) + len("```python\n")
    return text[start:text.index("```", start)]


def short_settings(script: str) -> list:
    """The `--set` values of the script's `SHORT` list."""
    for node in ast.walk(ast.parse(script)):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "SHORT":
            return ast.literal_eval(node.value)
    raise AssertionError("docs/pipelines.md's off-policy script has no SHORT list")


def assert_equal_states(a, b, where="policy"):
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b), \
            f"{where} differs"
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), f"{where}: keys {sorted(a)} != {sorted(b)}"
        for key in a:
            assert_equal_states(a[key], b[key], f"{where}/{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_equal_states(x, y, f"{where}/{i}")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def test_the_written_out_script_trains_what_rlpipe_train_trains(tmp_path):
    script = offpolicy_script()
    assert '"seed": 0, "max_env_step": 1536' in script  # the budget and seed used below
    (tmp_path / "script.py").write_text(script, encoding="utf-8")
    done = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    argv = [sys.executable, "-m", "rlpipe.cli", "train", "cartpole-dqn", "--seed", "0",
            "--max-env-steps", "1536", "--no-progress", "--run-dir", "runs/cli"]
    for setting in short_settings(script):
        argv += ["--set", setting]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    mine = load_checkpoint(tmp_path / "runs" / "my-dqn", which="final")
    cli = load_checkpoint(tmp_path / "runs" / "cli", which="final")
    assert mine["ctx"]["train_iter"] > 0
    assert_equal_states(mine["policy"], cli["policy"])
    assert_equal_states(mine["ctx"], cli["ctx"], "ctx")
