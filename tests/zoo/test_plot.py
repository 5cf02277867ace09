"""`rlpipe plot`: learning curves of run folders, drawn to a PNG the tests open and check."""
import json
import math
import sys

import numpy as np
import pytest
from PIL import Image

from rlpipe.cli import main
from rlpipe.tools.plot import EVAL, TRAIN, curves, plot_runs, t975


def _run(folder, entry, rows):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"entry": entry, "config": {}}))
    t0 = 1_000_000.0
    lines = [json.dumps({"env_step": step, "time": t0 + k, "wall_time": float(k), **values})
             for k, (step, values) in enumerate(rows)]
    (folder / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return str(folder)


def _linear_run(folder, entry, slope, steps=(0, 1000, 2000, 3000, 4000)):
    rows = [(s, {EVAL: slope * s, TRAIN: slope * s / 2}) for s in steps]
    return _run(folder, entry, rows)


def _png(path):
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB")).astype(int)


def _has_colour(pixels, rgb, tol=12):
    return bool((np.abs(pixels - np.array(rgb)).max(axis=-1) <= tol).any())


def test_several_runs_of_one_entry_are_a_mean_with_a_t_interval(tmp_path):
    a = _linear_run(tmp_path / "a", "cartpole-dqn", 0.01)
    b = _linear_run(tmp_path / "b", "cartpole-dqn", 0.03, steps=(0, 1500, 2500, 4000, 5000))
    c = _linear_run(tmp_path / "c", "cartpole-dqn", 0.05)
    drawn = {x.metric: x for x in curves([a, b, c], points=41)}
    ev = drawn[EVAL]
    assert ev.runs == 3 and ev.label == "cartpole-dqn"
    assert ev.steps[0] == 0 and ev.steps[-1] == 4000  # the range every run covers
    expected = 0.03 * ev.steps  # mean of the three slopes
    assert np.allclose(ev.mean, expected)
    spread = np.std([0.01 * ev.steps, 0.03 * ev.steps, 0.05 * ev.steps], axis=0, ddof=1)
    assert np.allclose(ev.high - ev.mean, t975(2) * spread / math.sqrt(3))
    assert np.allclose(ev.mean - ev.low, ev.high - ev.mean)
    assert np.allclose(drawn[TRAIN].mean, expected / 2)


def test_t_quantiles():
    assert t975(1) == pytest.approx(12.706) and t975(4) == pytest.approx(2.776)
    assert t975(60) == pytest.approx(2.000, abs=2e-3) and t975(10_000) == pytest.approx(1.96, abs=1e-3)
    with pytest.raises(ValueError, match="at least 2 runs"):
        t975(0)


def test_a_single_run_draws_its_logged_line_and_skips_non_finite_rows(tmp_path):
    rows = [(0, {EVAL: 9.0}), (512, {TRAIN: 12.0}), (1024, {EVAL: 30.0}), (1024, {EVAL: 31.0})]
    run = _run(tmp_path / "one", "acrobot-dqn", rows)
    drawn = {x.metric: x for x in curves([run])}
    assert drawn[EVAL].runs == 1 and drawn[EVAL].low is None
    assert drawn[EVAL].steps.tolist() == [0, 1024] and drawn[EVAL].mean.tolist() == [9.0, 31.0]
    assert drawn[TRAIN].steps.tolist() == [512]


def test_cli_draws_a_png_with_one_group_per_entry(tmp_path, capsys):
    runs = [_linear_run(tmp_path / f"dqn{k}", "cartpole-dqn", 0.01 * (k + 1)) for k in range(2)]
    runs.append(_linear_run(tmp_path / "ppo", "cartpole-ppo", 0.1))
    out = tmp_path / "curves.png"
    assert main(["plot", *runs, "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "cartpole-dqn (2 runs)" in said and "cartpole-ppo (1 run)" in said
    pixels = _png(out)
    assert pixels.shape == (360, 1040, 3)  # two panels of 5.2 x 3.6 inches at 100 dpi
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50  # not blank
    assert _has_colour(pixels, (31, 119, 180)) and _has_colour(pixels, (255, 127, 14))  # C0, C1
    drawn, path = plot_runs(runs, str(tmp_path / "again.svg"))
    assert sorted((c.label, c.metric, c.runs) for c in drawn) == sorted([
        ("cartpole-dqn", EVAL, 2), ("cartpole-dqn", TRAIN, 2),
        ("cartpole-ppo", EVAL, 1), ("cartpole-ppo", TRAIN, 1)])
    assert "<svg" in path.read_text()[:1000]


def test_cli_plots_a_real_training_run(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert main(["train", "cartpole-dqn", "--max-env-steps", "1024", "--run-dir", str(run_dir),
                 "--no-progress", "--set", "policy.eval.evaluator.n_episode=2",
                 "--set", "policy.eval.evaluator.eval_freq=100",
                 "--set", "policy.collect.random_collect_size=200",
                 "--set", "replay.min_samples=200"]) == 0
    out = tmp_path / "real.png"
    assert main(["plot", str(run_dir), "--out", str(out)]) == 0
    drawn, _ = plot_runs([str(run_dir)], str(tmp_path / "real2.png"))
    ev = next(c for c in drawn if c.metric == EVAL)
    assert len(ev.steps) >= 2 and ev.steps[-1] >= 1024 and np.all(ev.mean >= 8)
    pixels = _png(out)
    assert pixels.shape[0] == 360 and len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50


def test_runs_that_share_no_env_steps_are_refused(tmp_path, capsys):
    a = _linear_run(tmp_path / "a", "cartpole-dqn", 0.01, steps=(0, 100))
    b = _linear_run(tmp_path / "b", "cartpole-dqn", 0.01, steps=(200, 300))
    assert main(["plot", a, b, "--out", str(tmp_path / "x.png")]) == 2
    assert "share no env-step range" in capsys.readouterr().err


@pytest.mark.parametrize("case, expected", [
    ("not-a-run", "is not a run folder (it has no config.json)"),
    ("missing", "no such folder"),
    ("no-metrics-file", "has no metrics yet"),
    ("empty-metrics", "has no metrics yet"),
    ("bad-suffix", "name a .png or .svg file"),
    ("no-folder", "does not exist"),
    ("out-is-a-folder", "is a folder"),
])
def test_refusals_are_one_line_with_exit_2(case, expected, tmp_path, capsys):
    good = _linear_run(tmp_path / "good", "cartpole-dqn", 0.01)
    out = str(tmp_path / "curves.png")
    run = good
    if case == "not-a-run":
        (tmp_path / "plain").mkdir()
        run = str(tmp_path / "plain")
    elif case == "missing":
        run = str(tmp_path / "nope")
    elif case in ("no-metrics-file", "empty-metrics"):
        (tmp_path / "fresh").mkdir()
        (tmp_path / "fresh" / "config.json").write_text(json.dumps({"entry": "x", "config": {}}))
        if case == "empty-metrics":
            (tmp_path / "fresh" / "metrics.jsonl").write_text(json.dumps({"env_step": 0}) + "\n")
        run = str(tmp_path / "fresh")
    elif case == "bad-suffix":
        out = str(tmp_path / "curves.jpg")
    elif case == "no-folder":
        out = str(tmp_path / "no" / "curves.png")
    elif case == "out-is-a-folder":
        (tmp_path / "dir.png").mkdir()
        out = str(tmp_path / "dir.png")
    assert main(["plot", run, "--out", out]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and expected in err, err
    assert err.startswith("rlpipe plot: error: ")
    assert not (tmp_path / "curves.png").exists()


def test_without_matplotlib_plot_names_the_extra_to_install(tmp_path, monkeypatch, capsys):
    run = _linear_run(tmp_path / "a", "cartpole-dqn", 0.01)
    for name in ("matplotlib", "matplotlib.figure"):  # as if it were not installed
        monkeypatch.setitem(sys.modules, name, None)
    assert main(["plot", run, "--out", str(tmp_path / "curves.png")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("rlpipe plot: error: rlpipe plot (it draws with matplotlib) needs matplotlib, "
                   "which is not installed; install it with: pip install \"rlpipe[plot]\"")
    assert not (tmp_path / "curves.png").exists()
