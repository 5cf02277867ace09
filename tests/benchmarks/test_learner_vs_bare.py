"""benchmarks/learner_vs_bare.py: its bare loops train what the policies train, with the same
optimizers, and its --quick run prints a row per algorithm with positive finite figures."""
import importlib.util
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "learner_vs_bare.py"


def load_script():
    spec = importlib.util.spec_from_file_location("learner_vs_bare", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def optimizer_shapes(optimizers):
    """(lr, sorted parameter shapes) of each optimizer, sorted: what it trains and how fast."""
    return sorted((group["lr"], sorted(tuple(p.shape) for p in group["params"]))
                  for opt in optimizers for group in opt.param_groups)


@pytest.mark.parametrize("name", ["dqn", "sac", "td3", "bc", "iql", "td3-bc", "cql", "ppo",
                                  "ppo-lstm", "r2d2", "mappo"])
def test_bare_loop_trains_the_policys_parameter_shapes_with_the_same_adam(name):
    case = load_script().BUILDERS[name]()
    policy_optimizers = [v for v in vars(case.policy).values()
                         if isinstance(v, torch.optim.Optimizer)]
    assert policy_optimizers, f"{name}: the policy holds no optimizer attribute"
    assert optimizer_shapes(case.optimizers) == optimizer_shapes(policy_optimizers)
    assert all(isinstance(opt, torch.optim.Adam) for opt in case.optimizers + policy_optimizers)
    before = [p.detach().clone() for opt in case.optimizers for g in opt.param_groups
              for p in g["params"]]
    loss = case.update()
    after = [p for opt in case.optimizers for g in opt.param_groups for p in g["params"]]
    assert math.isfinite(loss)
    assert any(not torch.equal(a, b) for a, b in zip(before, after)), "the update moved nothing"


def test_quick_run_prints_a_row_per_algorithm_with_positive_finite_figures():
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    rows = re.findall(r"^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)$", done.stdout, re.M)
    figures = {name: [float(x) for x in rest] for name, *rest in rows if name != "algorithm"}
    assert sorted(figures) == ["bc", "dqn"]
    for name, (ours, bare, ratio) in figures.items():
        assert all(math.isfinite(x) and x > 0 for x in (ours, bare, ratio)), name
        assert ratio == pytest.approx(ours / bare, abs=0.02), name
