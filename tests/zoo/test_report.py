"""`rlpipe report`: rliable's aggregate metrics of final eval returns, grouped by entry and seed,
as a Markdown table and an interval plot; and `train --seeds` making the runs it reads."""
import json
import re

import numpy as np
import pytest
from PIL import Image

from rlpipe.cli import main

pytest.importorskip("rliable")


def _run(folder, entry, seed, finals, stop_value=None):
    """A run folder whose evaluations returned `finals` (the last is the final one)."""
    folder.mkdir(parents=True)
    config = {"seed": seed, "env": {"stop_value": stop_value}}
    (folder / "config.json").write_text(json.dumps({"entry": entry, "config": config}))
    rows = [{"env_step": 100 * (k + 1), "time": 1e6 + k, "wall_time": float(k),
             "eval/return_mean": value} for k, value in enumerate(finals)]
    rows.insert(1, {"env_step": 150, "time": 1e6 + 0.5, "wall_time": 0.5,
                    "collect/episode_return_mean": 999.0})  # not an evaluation
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(folder)


def _rliable(scores, threshold, reps=500, seed=0):
    from rliable import library, metrics

    def fn(x):
        return np.array([metrics.aggregate_iqm(x), metrics.aggregate_mean(x),
                         metrics.aggregate_median(x), metrics.aggregate_optimality_gap(x, threshold)])
    np.random.seed(seed)  # rliable 1.2 resamples with NumPy's global generator
    point, interval = library.get_interval_estimates(
        {"a": np.array(scores, dtype=float)[:, None]}, fn, reps=reps,
        random_state=np.random.RandomState(seed))
    return point["a"], interval["a"]


def _table_row(text, entry):
    line = next(x for x in text.splitlines() if x.startswith(f"| {entry} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def _cells(row):
    return [[float(v) for v in re.findall(r"-?\d+\.\d+", c)] for c in row[3:7]]


def test_table_values_are_rliables_on_the_same_data(tmp_path, capsys):
    dqn = [[10.0, 120.0], [5.0, 200.0], [30.0, 90.0], [1.0, 180.0], [7.0, 150.0]]
    runs = [_run(tmp_path / f"dqn{s}", "cartpole-dqn", s, f, stop_value=195) for s, f in enumerate(dqn)]
    ppo = [300.0, 500.0, 410.0]
    runs += [_run(tmp_path / f"ppo{s}", "cartpole-ppo", s, [1.0, v], stop_value=195)
             for s, v in enumerate(ppo)]
    out = tmp_path / "rep"
    assert main(["report", *runs, "--out", str(out), "--reps", "500"]) == 0
    text = capsys.readouterr().out
    assert (out / "report.md").read_text() in text
    for entry, finals in (("cartpole-dqn", [f[-1] for f in dqn]), ("cartpole-ppo", ppo)):
        row = _table_row(text, entry)
        assert row[1] == str(len(finals)) and row[2] == "return" and row[7] == "195"
        point, interval = _rliable(finals, 195.0)
        for j, (value, lo, hi) in enumerate(_cells(row)):
            assert value == pytest.approx(point[j], abs=0.051)
            assert (lo, hi) == (pytest.approx(interval[0][j], abs=0.051),
                                pytest.approx(interval[1][j], abs=0.051))
    assert "cartpole-dqn: seed 0: 120.00, seed 1: 200.00" in text
    with Image.open(out / "report.png") as image:  # 4 panels of 3.2 in; 1.3 in + 0.5 per entry
        assert image.size == (1280, 230)
        pixels = np.asarray(image.convert("RGB")).astype(int)
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50
    for colour in ([31, 119, 180], [255, 127, 14]):  # the entries' bars: C0, C1 at alpha 0.75
        blended = 0.75 * np.array(colour) + 0.25 * 255
        assert (np.abs(pixels - blended).max(axis=-1) < 12).sum() > 500


def test_normalised_scores_and_the_gap_threshold(tmp_path, capsys):
    runs = [_run(tmp_path / f"r{s}", "pendulum-sac", s, [v]) for s, v in
            enumerate([-1000.0, -400.0, -200.0])]
    assert main(["report", *runs, "--out", str(tmp_path / "a"), "--reps", "200",
                 "--normalize", "pendulum-sac=-1600:-150"]) == 0
    row = _table_row(capsys.readouterr().out, "pendulum-sac")
    scores = [(v + 1600) / 1450 for v in (-1000.0, -400.0, -200.0)]
    point, _ = _rliable(scores, 1.0, reps=200)
    assert row[2] == "normalised" and row[7] == "1"
    assert [c[0] for c in _cells(row)] == pytest.approx(point, abs=6e-4)
    # no stop_value and no --gap-threshold: no gap, said so
    assert main(["report", *runs, "--out", str(tmp_path / "b"), "--reps", "200"]) == 0
    row = _table_row(capsys.readouterr().out, "pendulum-sac")
    assert row[6] == "n/a" and "--gap-threshold" in row[7]


@pytest.mark.parametrize("make, message", [
    (lambda p: p.mkdir() or str(p), "not a run folder"),
    (lambda p: str(p / "missing"), "no such folder"),
    (lambda p: _run(p, "cartpole-dqn", 0, []), "no evaluation return"),
])
def test_folders_that_are_not_runs_are_one_line_errors(tmp_path, capsys, make, message):
    good = _run(tmp_path / "good", "cartpole-dqn", 1, [3.0])
    assert main(["report", good, make(tmp_path / "bad"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "bad" in err[0]
    assert not (tmp_path / "o").exists()


def test_a_seed_twice_and_an_unknown_normalised_entry_are_refused(tmp_path, capsys):
    a = _run(tmp_path / "a", "cartpole-dqn", 0, [3.0])
    b = _run(tmp_path / "b", "cartpole-dqn", 0, [4.0])
    assert main(["report", a, b]) == 2
    assert "seed 0 is given twice" in capsys.readouterr().err
    assert main(["report", a, "--normalize", "cartpole-ppo=0:500"]) == 2
    assert "cartpole-ppo" in capsys.readouterr().err


def test_seed_options_that_cannot_work_are_refused(capsys):
    for argv, message in ((["--jobs", "2"], "goes with --seeds"),
                          (["--seeds", "0-1", "--seed", "3"], "drop --seed"),
                          (["--seeds", "0-1", "--resume", "x"], "drop --resume"),
                          (["--seeds", "2-1"], "--seeds '2-1'")):
        assert main(["train", "cartpole-dqn", *argv]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err


def test_seed_list_parsing_and_the_childrens_command_line():
    from rlpipe.runs.seeds import child_argv, parse_seeds

    assert parse_seeds("0-4") == [0, 1, 2, 3, 4] and parse_seeds("1,5,9") == [1, 5, 9]
    assert parse_seeds("0-1,7") == [0, 1, 7]
    for bad in ("4-0", "a", "1,1", ""):
        with pytest.raises(ValueError, match="--seeds"):
            parse_seeds(bad)
    argv = ["train", "cartpole-dqn", "--seeds", "0-2", "--jobs=2", "--run-dir", "x",
            "--set", "a=1", "--no-progress"]
    assert child_argv(argv) == ["train", "cartpole-dqn", "--set", "a=1"]


TINY_DQN = ["--max-env-steps", "256", "--set", "policy.collect.random_collect_size=128",
            "--set", "replay.min_samples=128", "--set", "policy.eval.evaluator.n_episode=1",
            "--set", "policy.eval.evaluator.eval_freq=50"]


@pytest.mark.slow
def test_report_over_three_seeds_of_two_entries_made_by_train_seeds(tmp_path, capsys):
    assert main(["train", "cartpole-dqn", "--seeds", "0-2", "--jobs", "3",
                 "--run-dir", str(tmp_path / "dqn"), *TINY_DQN]) == 0
    assert main(["train", "cartpole-ppo", "--seeds", "0-2", "--run-dir", str(tmp_path / "ppo"),
                 "--max-env-steps", "256", "--set", "policy.eval.evaluator.n_episode=1"]) == 0
    captured = capsys.readouterr()
    summaries = [json.loads(x) for x in captured.out.splitlines() if x.startswith('{"seeds"')]
    assert [[s["seed"] for s in x["seeds"]] for x in summaries] == [[0, 1, 2], [0, 1, 2]]
    assert "seed      final       best" in captured.err
    finals = {}
    for summary in summaries:
        for s in summary["seeds"]:
            assert s["exit_code"] == 0 and s["summary"]["env_step"] >= 256
            config = json.loads((tmp_path / s["run_dir"] / "config.json").read_text())
            assert config["config"]["seed"] == s["seed"]
            finals.setdefault(config["entry"], []).append(s["summary"]["eval_value"])
    out = tmp_path / "rep"
    assert main(["report", str(tmp_path / "dqn"), str(tmp_path / "ppo"), "--out", str(out),
                 "--reps", "300"]) == 0
    text = capsys.readouterr().out
    for entry, values in finals.items():
        row = _table_row(text, entry)
        stop_value = json.loads((tmp_path / "dqn" / "seed-0" / "config.json").read_text()
                                )["config"]["env"]["stop_value"]  # the CartPole entries' own
        assert row[1] == "3" and float(row[7]) == stop_value
        point, interval = _rliable(values, float(stop_value), reps=300)
        for j, (value, lo, hi) in enumerate(_cells(row)):
            assert (value, lo, hi) == (pytest.approx(point[j], abs=0.051),
                                       pytest.approx(interval[0][j], abs=0.051),
                                       pytest.approx(interval[1][j], abs=0.051))
    with Image.open(out / "report.png") as image:
        assert image.size == (1280, 230)


@pytest.mark.slow
def test_a_failing_seed_is_named_and_the_others_are_kept(tmp_path, capsys):
    (tmp_path / "seeds" / "seed-1").mkdir(parents=True)
    (tmp_path / "seeds" / "seed-1" / "other.txt").write_text("not empty")  # refused run folder
    assert main(["train", "cartpole-dqn", "--seeds", "0,1", "--run-dir", str(tmp_path / "seeds"),
                 *TINY_DQN]) == 1
    captured = capsys.readouterr()
    seeds = json.loads(captured.out.strip().splitlines()[-1])["seeds"]
    assert seeds[0]["exit_code"] == 0 and seeds[0]["summary"]["env_step"] >= 256
    assert seeds[1]["exit_code"] == 2 and seeds[1]["summary"] is None
    assert "seed-1" in seeds[1]["error"]
    assert "1 of 2 seeds failed: 1" in captured.err and "FAILED (exit 2)" in captured.err
    assert (tmp_path / "seeds" / "seed-0" / "ckpt" / "final.pt").is_file()


def test_a_seeds_folder_stands_for_its_seed_runs_in_report_and_plot(tmp_path, capsys):
    for s, v in enumerate([10.0, 20.0, 40.0]):
        _run(tmp_path / "seeds" / f"seed-{s}", "cartpole-dqn", s, [1.0, 2.0, v])
    (tmp_path / "seeds" / "seed-0.stderr.txt").write_text("")  # what --seeds leaves beside them
    assert main(["report", str(tmp_path / "seeds"), "--out", str(tmp_path / "r"), "--reps", "200"]) == 0
    row = _table_row(capsys.readouterr().out, "cartpole-dqn")
    assert row[1] == "3" and _cells(row)[1][0] == pytest.approx(70 / 3, abs=0.051)  # the mean
    assert main(["plot", str(tmp_path / "seeds"), "--out", str(tmp_path / "c.png")]) == 0
    assert "cartpole-dqn (3 runs)" in capsys.readouterr().out
