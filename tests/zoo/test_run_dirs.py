"""Run folders that never mix or lose runs, through the CLI."""
import json
import pathlib
import shutil

import pytest

from rlpipe.cli import main
from rlpipe.runs import LOCK_FILE
from rlpipe.runs.create import new_run_dir

SHORT = ["--max-env-steps", "200", "--no-progress", "--set", "policy.eval.evaluator.n_episode=2",
         "--set", "env.n_envs=2", "--set", "env.eval_n_envs=2"]


def _snapshot(folder: pathlib.Path) -> dict:
    """Every file of a run folder with its mtime and size, but the writer's lock file (which
    a refused resume takes, and writes its pid into, before it checks anything)."""
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != LOCK_FILE}


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


@pytest.fixture
def done_run(tmp_path, capsys) -> pathlib.Path:
    run_dir = tmp_path / "run"
    assert main(["train", "cartpole-ppo", "--run-dir", str(run_dir), *SHORT]) == 0
    capsys.readouterr()
    return run_dir


def test_run_dir_holding_a_run_is_refused_and_left_untouched(done_run, capsys):
    before = _snapshot(done_run)
    assert main(["train", "cartpole-ppo", "--run-dir", str(done_run), *SHORT]) == 2
    err = _one_line_error(capsys)
    assert f"--resume {done_run}" in err and "--overwrite" in err
    assert _snapshot(done_run) == before


def test_overwrite_replaces_the_run(done_run, capsys):
    assert main(["train", "cartpole-ppo", "--run-dir", str(done_run), "--overwrite",
                 "--seed", "7", *SHORT]) == 0
    assert json.loads((done_run / "config.json").read_text())["config"]["seed"] == 7
    rows = (done_run / "metrics.jsonl").read_text().splitlines()
    assert len(rows) == len({json.loads(r)["train_iter"] for r in rows})  # one run's rows only


def test_overwrite_leaves_a_folder_that_is_no_run_alone(tmp_path, capsys):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    assert main(["train", "cartpole-ppo", "--run-dir", str(folder), "--overwrite", *SHORT]) == 2
    assert "not an rlpipe run folder" in _one_line_error(capsys)
    assert (folder / "notes.txt").read_text() == "keep me"


def test_a_run_failing_before_its_first_iteration_leaves_no_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "cartpole-ppo", "--set", "env.id=NoSuchEnv-v0", *SHORT]) == 2
    assert "NoSuchEnv-v0" in _one_line_error(capsys)
    assert not list((tmp_path / "runs").rglob("*"))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["train", "cartpole-ppo", "--set", "env.id=NoSuchEnv-v0", "--run-dir", str(empty),
                 *SHORT]) == 2
    assert empty.is_dir() and not list(empty.iterdir())


def test_resume_without_a_checkpoint_restarts_from_the_saved_config(done_run, capsys, caplog):
    # as if killed before its first periodic checkpoint: only the first evaluation's best.pt
    for path in (done_run / "ckpt").iterdir():
        if path.name != "best.pt":
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert (done_run / "ckpt" / "best.pt").is_file()
    assert main(["train", "--resume", str(done_run), "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["env_step"] >= 200 and summary["run_dir"] == str(done_run)
    assert any("no checkpoint yet" in r.getMessage() for r in caplog.records)
    assert (done_run / "ckpt" / "final.pt").is_file()
    rows = [json.loads(r) for r in (done_run / "metrics.jsonl").read_text().splitlines()]
    assert [r["train_iter"] for r in rows] == sorted({r["train_iter"] for r in rows})


@pytest.mark.parametrize("extra, expected", [
    (["--set", "env.id=Acrobot-v1"], "cannot change a run that used env.id=CartPole-v1"),
    (["--seed", "3"], "drop --seed"),
    ([], "already reached its budget"),
])
def test_resume_refuses_with_one_line(done_run, extra, expected, capsys):
    before = _snapshot(done_run)
    assert main(["train", "--resume", str(done_run), "--no-progress", *extra]) == 2
    assert expected in _one_line_error(capsys)
    assert _snapshot(done_run) == before


@pytest.mark.parametrize("flag", [["--backend", "local"], ["--evaluator"]])
def test_distributed_flags_without_collectors_are_refused(flag, tmp_path, capsys):
    assert main(["train", "cartpole-dqn", "--run-dir", str(tmp_path / "r"), *flag, *SHORT]) == 2
    assert "--collectors" in _one_line_error(capsys)
    assert not (tmp_path / "r").exists()


def test_new_run_dirs_in_the_same_second_never_collide(tmp_path):
    made = {new_run_dir("x", str(tmp_path)) for _ in range(5)}
    assert len(made) == 5 and all(pathlib.Path(p).is_dir() for p in made)
