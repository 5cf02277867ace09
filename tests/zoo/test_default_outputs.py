"""The default outputs of the commands a user runs after training land where they belong: in
the run folder they describe or under runs/ (plot, report, tune, eval --video), a data set in
Minari's own root; the working directory gets nothing but runs/, and the printed path is
where the file is."""
import importlib.util
import json
import os
import re
from pathlib import Path

import pytest

from rlpipe.cli import main

TINY = ["--no-progress", "--max-env-steps", "256", "--set", "replay.min_samples=64",
        "--set", "policy.collect.random_collect_size=64", "--set", "env.n_envs=2",
        "--set", "env.eval_n_envs=2", "--set", "policy.eval.evaluator.n_episode=2"]


@pytest.fixture
def cwd(tmp_path, monkeypatch, capsys):
    """A working directory with two runs of cartpole-dqn in runs/a and runs/b, and a home
    folder of its own (Minari's default root is under it)."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MINARI_DATASETS_PATH", raising=False)
    for name, seed in (("a", "0"), ("b", "1")):
        assert main(["train", "cartpole-dqn", "--seed", seed, "--run-dir", f"runs/{name}"]
                    + TINY) == 0
    capsys.readouterr()
    return work


def _only_runs_in(work):
    assert sorted(p.name for p in work.iterdir()) == ["runs"]


def test_plot_writes_into_the_run_folder_or_under_runs(cwd, capsys):
    assert main(["plot", "runs/a"]) == 0
    written = re.search(r"wrote (\S+):", capsys.readouterr().out)[1]
    assert Path(written) == Path("runs/a/curves.png") and Path(written).stat().st_size > 0
    assert main(["plot", "runs/a", "runs/b"]) == 0
    written = re.search(r"wrote (\S+):", capsys.readouterr().out)[1]
    assert Path(written) == Path("runs/curves.png") and Path(written).is_file()
    _only_runs_in(cwd)


def test_report_writes_under_runs(cwd, capsys):
    pytest.importorskip("rliable")
    assert main(["report", "runs/a", "runs/b", "--reps", "100"]) == 0
    written = capsys.readouterr().err.strip().splitlines()[-1].removeprefix("wrote ").split(", ")
    assert [Path(p) for p in written] == [Path("runs/report/report.md"),
                                          Path("runs/report/report.png")]
    assert all(Path(p).is_file() for p in written)
    _only_runs_in(cwd)


@pytest.mark.skipif(not all(importlib.util.find_spec(m) for m in ("moviepy", "pygame")),
                    reason="needs the [video] extra")
def test_eval_video_records_into_the_run_folder(cwd, capsys):
    for folder in ("videos", "videos-2"):  # a second recording does not overwrite the first
        assert main(["eval", "runs/a", "--video"]) == 0
        out = capsys.readouterr()
        result = json.loads(out.out.strip().splitlines()[-1])
        assert f"to runs/a/{folder}" in out.err and result["video_dir"] == f"runs/a/{folder}"
        assert result["videos"] and all(Path(p).parent == Path("runs/a", folder)
                                        for p in result["videos"])
    _only_runs_in(cwd)


def test_dataset_goes_to_minaris_own_root(cwd, capsys):
    pytest.importorskip("minari")
    assert main(["dataset", "collect", "random", "--env", "CartPole-v1", "--episodes", "2",
                 "--id", "cartpole/here-v0", "--no-progress"]) == 0
    capsys.readouterr()
    root = Path(os.environ["HOME"]) / ".minari" / "datasets"
    assert (root / "cartpole" / "here-v0" / "data").is_dir()
    _only_runs_in(cwd)


@pytest.mark.slow
def test_tune_writes_under_runs_tune(cwd, capsys):
    pytest.importorskip("optuna")
    assert main(["tune", "cartpole-dqn", "--trials", "1", "--budget", "256", "--no-progress",
                 "--set", "replay.min_samples=64", "--set", "env.n_envs=2",
                 "--set", "policy.eval.evaluator.n_episode=2"]) == 0
    out = capsys.readouterr()
    assert (cwd / "runs" / "tune" / "cartpole-dqn" / "best.yaml").is_file()
    assert "runs/tune/cartpole-dqn" in out.out + out.err
    _only_runs_in(cwd)
