"""docs/pipelines.md's written-out scripts, public API only, train the same weights as
`rlpipe train ENTRY` at the same seed, budget and `--set` values: every tensor of final.pt's
policy state (networks, optimiser states, counters, RNG state) is equal, and so are the
context's counters. Each script is run as the doc runs it: after the imports of the doc's
earlier blocks, and after the `rlpipe ...` lines of its section (e.g. making its data set)."""
import ast
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest
import torch

from rlpipe.middleware.ckpt import load_checkpoint
from rlpipe.zoo import get_entry

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "pipelines.md"
FENCE = re.compile(r"^```(python|bash)([^\n]*)\n(.*?)^```", re.S | re.M)


def section(heading: str) -> str:
    """The doc's text from `## heading` to the next `## ` heading."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def blocks(text: str, language: str) -> list:
    return [m.group(3) for m in FENCE.finditer(text)
            if m.group(1) == language and "no-run" not in m.group(2)]


def section_script(heading: str) -> str:
    """The section's python block, preceded by the imports of every earlier python block of
    the doc (the doc's blocks run in one namespace)."""
    text = DOC.read_text(encoding="utf-8")
    script = blocks(section(heading), "python")[0]
    imports = []
    for earlier in blocks(text[:text.index(f"## {heading}\n")], "python"):
        tree = ast.parse(earlier)
        imports += [ast.get_source_segment(earlier, node) for node in tree.body
                    if isinstance(node, (ast.Import, ast.ImportFrom))]
    return "\n".join(imports + [script])


def assigned(script: str, name: str):
    """The literal value the script assigns to `name` (a variable or an attribute)."""
    for node in ast.walk(ast.parse(script)):
        if isinstance(node, ast.Assign):
            target = node.targets[0]
            if getattr(target, "id", None) == name or (
                    isinstance(target, ast.Attribute) and f"cfg.{target.attr}" == name):
                return ast.literal_eval(node.value)
    raise AssertionError(f"docs/pipelines.md: the script assigns no {name}")


def resolve_user(script: str) -> dict:
    """The user settings the script passes to `get_entry(...).resolve(user, SHORT)`."""
    for node in ast.walk(ast.parse(script)):
        if (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "resolve"
                and node.args):
            return ast.literal_eval(node.args[0])
    raise AssertionError("docs/pipelines.md: the script calls no get_entry(...).resolve(...)")


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


def check_against_cli(tmp_path, heading: str, entry: str) -> dict:
    """Run the section's script and `rlpipe train ENTRY` with the script's seed, budget and
    SHORT settings; assert that their final checkpoints are equal; the script's checkpoint."""
    script = section_script(heading)
    assert f'get_entry("{entry}")' in script
    env = dict(os.environ, MINARI_DATASETS_PATH=str(tmp_path / "minari"))
    for block in blocks(section(heading), "bash"):
        for line in block.splitlines():
            if line.strip().startswith("rlpipe "):
                argv = [sys.executable, "-m", "rlpipe.cli", *shlex.split(line)[1:]]
                done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True,
                                      text=True, timeout=300)
                assert done.returncode == 0, done.stderr[-2000:]
    (tmp_path / "script.py").write_text(script, encoding="utf-8")
    done = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    user = resolve_user(script)
    argv = [sys.executable, "-m", "rlpipe.cli", "train", entry, "--seed", str(user["seed"]),
            "--no-progress", "--run-dir", "runs/cli"]
    if "max_env_step" in user:
        argv += ["--max-env-steps", str(user["max_env_step"])]
    for setting in assigned(script, "SHORT"):
        argv += ["--set", setting]
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    mine = load_checkpoint(tmp_path / assigned(script, "cfg.run_dir"), which="final")
    cli = load_checkpoint(tmp_path / "runs" / "cli", which="final")
    assert mine["ctx"]["train_iter"] > 0
    assert_equal_states(mine["policy"], cli["policy"])
    assert_equal_states(mine["ctx"], cli["ctx"], "ctx")
    return mine


def test_the_offpolicy_script_trains_what_rlpipe_train_trains(tmp_path):
    check_against_cli(tmp_path, "Off-policy, written out", "cartpole-dqn")


def test_the_onpolicy_script_trains_what_rlpipe_train_trains(tmp_path):
    check_against_cli(tmp_path, "On-policy, written out", "cartpole-ppo")


@pytest.mark.slow
def test_the_offline_script_trains_what_rlpipe_train_trains(tmp_path):
    mine = check_against_cli(tmp_path, "Offline, written out", "cartpole-bc")
    short = assigned(section_script("Offline, written out"), "SHORT")
    budget = [int(s.split("=")[1]) for s in short if s.startswith("max_train_iter=")]
    assert budget and mine["ctx"]["train_iter"] == budget[0]  # the run ends at SHORT's budget


@pytest.mark.slow
def test_the_r2d2_script_trains_what_rlpipe_train_trains(tmp_path):
    check_against_cli(tmp_path, "Recurrent sequences (R2D2)", "cartpole-novel-r2d2")


def test_the_multi_agent_script_trains_what_rlpipe_train_trains(tmp_path):
    mine = check_against_cli(tmp_path, "Multi-agent, written out", "simple-spread-mappo")
    n_agents = get_entry("simple-spread-mappo").config["env"]["env_kwargs"]["N"]
    assert len(mine["ctx"]["agents"]) == n_agents  # the agent axis is kept with the context


def test_the_distributed_example_trains_in_a_learner_and_one_collector(tmp_path):
    script = section_script("Several processes: distributed and real-time")
    check = ('\nimport json\nprint(json.dumps({"collectors": summary["collectors"], '
             '"env_step": summary["env_step"]}))\n')
    (tmp_path / "script.py").write_text(script + check, encoding="utf-8")
    done = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    user = resolve_user(script)
    assert result["collectors"] == user["parallel"]["collectors"] == 1
    assert result["env_step"] >= user["max_env_step"]
    learner = load_checkpoint(tmp_path / assigned(script, "cfg.run_dir"), which="final")
    assert learner["ctx"]["train_iter"] > 0  # the learner trained on the collector's steps
