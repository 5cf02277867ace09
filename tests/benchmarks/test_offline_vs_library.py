"""benchmarks/offline_vs_library.py: its rlpipe and bare sides train networks of the requested
sizes with the same parameter shapes, and a run of 2 updates prints a row per algorithm (the
d3rlpy side only where d3rlpy imports; it is not a dependency of rlpipe)."""
import importlib.util
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "offline_vs_library.py"
HAS_D3RLPY = importlib.util.find_spec("d3rlpy") is not None


def load_script():
    spec = importlib.util.spec_from_file_location("offline_vs_library", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["iql", "td3-bc", "cql"])
def test_rlpipe_and_bare_sides_train_the_same_shapes_at_the_requested_sizes(name):
    script = load_script()
    sides = script.build(name, hidden=(24, 40), batch_size=16, library=False,
                         data=script.pendulum_data(episodes=1))
    ours = [tuple(p.shape) for p in script.optimized_params(
        script.policy_optimizers(sides.policy))]
    bare = [tuple(p.shape) for p in script.optimized_params(sides.bare.optimizers)]
    assert sorted(ours) == sorted(bare)
    # every network is 24 then 40 wide: a first layer (24, obs [+ action]), a second (40, 24)
    assert (40, 24) in ours and any(s[0] == 24 and s[1] in (3, 4) for s in ours if len(s) == 2)
    assert not any(256 in s for s in ours)
    assert sides.policy.cfg.learn.batch_size == 16
    assert sides.bare.batch["obs"].shape == (16, 3)
    assert set(sides.updates) == {"rlpipe", "bare"}
    script.check_shapes(name, sides)  # raises where the sides differ


def test_the_rlpipe_side_takes_d3rlpys_settings_that_change_the_work():
    script = load_script()
    cfg = script.rlpipe_cfg("cql", (32, 32), 64, compile_=False)
    learn = cfg["learn"]
    assert learn["cql_n_actions"] == 10 and learn["lagrange_threshold"] == 10.0
    assert learn["batch_size"] == 64 and cfg["model"]["critic_hidden"] == (32, 32)
    assert script.rlpipe_cfg("iql", (32, 32), 64, compile_=True)["learn"]["compile"] is True


def test_two_updates_print_a_row_per_algorithm_with_positive_finite_figures():
    done = subprocess.run([sys.executable, str(SCRIPT), "--rounds", "1", "--updates", "2",
                           "--hidden", "32", "32", "--batch", "16"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    rows = {name: rest.split() for name, rest in
            re.findall(r"^(iql|td3-bc|cql)(.*)$", done.stdout, re.M)}
    assert sorted(rows) == ["cql", "iql", "td3-bc"]
    for name, (library, rlpipe, bare, *ratios) in rows.items():
        for x in (rlpipe, bare, ratios[-1]):
            assert math.isfinite(float(x)) and float(x) > 0, name
        assert float(ratios[-1]) == pytest.approx(float(rlpipe) / float(bare), abs=0.02)
        if HAS_D3RLPY:
            assert float(library) > 0, name
        else:
            assert library == "-" and ratios[:2] == ["-", "-"], name
    if not HAS_D3RLPY:
        assert "d3rlpy is not importable" in done.stdout


def test_sampling_draws_a_batch_of_the_requested_rows_on_each_side():
    script = load_script()
    sides = script.sampling_sides(script.pendulum_episodes(episodes=1), 32, HAS_D3RLPY)
    assert set(sides) == ({"rlpipe", "d3rlpy"} if HAS_D3RLPY else {"rlpipe"})
    assert len(sides["rlpipe"]()["reward"]) == 32
    if HAS_D3RLPY:
        assert sides["d3rlpy"]().observations.shape == (32, 3)
