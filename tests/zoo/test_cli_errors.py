"""How `rlpipe train` ends on errors: one line for an unwritable run folder (exit 2), one
paragraph naming the checkpoint to resume from for non-finite numbers or a crash-looping env
(exit 1); `--debug` / RLPIPE_DEBUG=1 add the traceback. All through the CLI's main()."""
import errno
import io
import os
import pathlib

import gymnasium as gym
import pytest
import torch

from rlpipe.cli import main
from rlpipe.cli.errors import explain, last_checkpoint
from rlpipe.runs import LOCK_FILE, RunDir

SMALL = ["--no-progress", "--max-env-steps", "400", "--set", "replay.min_samples=64",
         "--set", "policy.collect.n_sample=32", "--set", "env.n_envs=2",
         "--set", "env.eval_n_envs=2", "--set", "policy.eval.evaluator.n_episode=2"]
NAN = ["train", "cartpole-dqn", "--set", "policy.learn.lr=1e39", "--set", "ckpt.train_freq=1"]
CRASHY_ID = "RlpipeTestCrashLoop-v0"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RLPIPE_DEBUG", raising=False)


def test_non_finite_loss_is_one_paragraph_naming_loss_iteration_and_checkpoint(capsys, tmp_path):
    run_dir = tmp_path / "run"
    assert main(NAN + SMALL + ["--run-dir", str(run_dir)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    stop = [ln for ln in err.splitlines() if ln.startswith("rlpipe train: stopped:")]
    assert len(stop) == 1, err
    line = stop[0]
    assert "'loss' is nan" in line and "train_iter 1" in line
    # the NaN comes before the first end-of-iteration checkpoint: only best.pt (weights, no
    # resume state) exists, so nothing is resumable and the line names best.pt as weights only
    assert last_checkpoint(str(run_dir)) is None
    assert str(run_dir / "ckpt" / "best.pt") in line and "weights only" in line
    assert "--debug" in line


@pytest.mark.parametrize("how", ["flag-before", "flag-after", "env"])
def test_debug_shows_the_traceback(how, capsys, tmp_path, monkeypatch):
    argv = NAN + SMALL + ["--run-dir", str(tmp_path / "run")]
    if how == "flag-before":
        argv = ["--debug"] + argv
    elif how == "flag-after":
        argv = argv[:2] + ["--debug"] + argv[2:]
    else:
        monkeypatch.setenv("RLPIPE_DEBUG", "1")
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "NonFiniteLossError" in err
    assert "rlpipe train: stopped:" in err  # the paragraph still closes the output


def test_a_stop_without_checkpoint_says_so():
    err = FloatingPointError("trainer: 'loss' is inf at train_iter 0.")
    message, code = explain(err, "train", None)
    assert code == 1 and "No checkpoint was written" in message
    err.last_good = "runs/x/ckpt/iter_3.pt"  # what NonFiniteStateError carries
    message, _ = explain(err, "train", "runs/x")
    assert "runs/x/ckpt/iter_3.pt" in message and "--resume runs/x" in message


class CrashLoopEnv(gym.Env):
    """Raises on the 3rd step of every instance: a crash loop."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (4,), "float32")
        self.action_space = gym.spaces.Discrete(2)
        self.steps = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.steps = 0
        return self.observation_space.sample() * 0, {}

    def step(self, action):
        self.steps += 1
        if self.steps == 3:
            raise RuntimeError("sensor unplugged")
        return self.observation_space.sample() * 0, 1.0, False, False, {}


def test_crash_looping_env_stops_with_a_paragraph(capsys, tmp_path, caplog):
    gym.register(CRASHY_ID, entry_point=CrashLoopEnv)
    try:
        argv = ["train", "cartpole-dqn", "--set", f"env.id={CRASHY_ID}", "--set",
                "env.max_restarts=2", "--set", "env.stop_value=None",
                "--run-dir", str(tmp_path / "run")] + SMALL
        assert main(argv) == 1
    finally:
        gym.registry.pop(CRASHY_ID)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    stop = [ln for ln in err.splitlines() if ln.startswith("rlpipe train: stopped:")]
    assert len(stop) == 1, err
    line = stop[0]
    assert CRASHY_ID in line and "RuntimeError: sensor unplugged" in line
    assert "env.max_restarts" in line and "checkpoint" in line
    assert str(tmp_path / "run" / "log.txt") in line
    # each restart was logged with the env's traceback (captured here, and in log.txt)
    assert any("sensor unplugged" in r.getMessage() for r in caplog.records)
    assert "sensor unplugged" in (tmp_path / "run" / "log.txt").read_text()


def _one_line_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_run_dir_that_is_a_file(capsys, tmp_path):
    target = tmp_path / "a-file"
    target.write_text("not a folder")
    err = _one_line_exit_2(["train", "cartpole-dqn", "--run-dir", str(target)] + SMALL, capsys)
    assert str(target) in err and "a file of that name exists" in err
    assert target.read_text() == "not a folder"


def test_run_dir_below_a_file(capsys, tmp_path):
    parent = tmp_path / "a-file"
    parent.write_text("")
    err = _one_line_exit_2(["train", "cartpole-dqn", "--run-dir", str(parent / "run")] + SMALL,
                           capsys)
    assert str(parent / "run") in err and "Not a directory" in err


def test_runs_root_that_cannot_be_made(capsys, tmp_path):
    (tmp_path / "runs").write_text("")  # the default runs/<name>/<timestamp>/ cannot be made
    err = _one_line_exit_2(["train", "cartpole-dqn"] + SMALL, capsys)
    assert "runs" in err and "cannot write the run folder" in err


def _is_writable_despite_mode(folder: pathlib.Path) -> bool:
    probe = folder / "probe"
    try:
        probe.write_text("")
    except PermissionError:
        return False
    probe.unlink()
    return True


def test_read_only_parent_folder(capsys, tmp_path):
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o500)
    try:
        if _is_writable_despite_mode(parent):
            pytest.skip("running as root: chmod does not stop writes (the other folder tests "
                        "cover an unwritable folder without chmod)")
        err = _one_line_exit_2(["train", "cartpole-dqn", "--run-dir", str(parent / "run")]
                               + SMALL, capsys)
        assert str(parent / "run") in err and "(permission denied)" in err
        assert list(parent.iterdir()) == []
    finally:
        parent.chmod(0o700)


def _no_timestamp_folder(runs: pathlib.Path) -> bool:
    return not runs.exists() or not any(runs.iterdir())


def test_full_disk_before_the_first_iteration_leaves_no_timestamp_folder(capsys, tmp_path,
                                                                         monkeypatch):
    import rlpipe.runs.create as run_module

    def full(run_dir, name, cfg):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC),
                      str(pathlib.Path(run_dir) / "config.json"))

    monkeypatch.setattr(run_module, "write_config", full)
    err = _one_line_exit_2(["train", "cartpole-dqn"] + SMALL, capsys)
    assert "no space left on device while writing" in err and "config.json" in err
    assert "free space and run again" in err  # nothing was left to resume
    assert _no_timestamp_folder(tmp_path / "runs" / "cartpole-dqn")


def test_ctrl_c_before_the_first_iteration_leaves_no_timestamp_folder(capsys, tmp_path,
                                                                      monkeypatch):
    # before the graceful stop is in place, Ctrl-C is a plain KeyboardInterrupt
    import rlpipe.runs.create as run_module

    attach = run_module.attach_log_file

    def ctrl_c(run_dir):
        attach(run_dir)
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module, "attach_log_file", ctrl_c)
    assert main(["train", "cartpole-dqn"] + SMALL) == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == "rlpipe: interrupted"
    assert _no_timestamp_folder(tmp_path / "runs" / "cartpole-dqn")


def test_full_disk_mid_run_keeps_the_run_and_says_which_folder(capsys, tmp_path, monkeypatch):
    import rlpipe.middleware.ckpt as ckpt_module

    write, calls = ckpt_module.atomic_write_bytes, []

    def full_after_two(path, data):  # the disk fills up after two checkpoint files
        calls.append(path)
        if len(calls) > 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return write(path, data)

    monkeypatch.setattr(ckpt_module, "atomic_write_bytes", full_after_two)
    run_dir = tmp_path / "run"
    err = _one_line_exit_2(["train", "cartpole-dqn", "--run-dir", str(run_dir), "--set",
                            "ckpt.train_freq=1"] + SMALL, capsys)
    assert str(run_dir) in err and "no space left on device" in err
    assert f"free space and resume with rlpipe train --resume {run_dir}" in err
    assert len(calls) == 3
    # the run had results: its folder and checkpoints stay, for --resume
    assert (run_dir / "config.json").is_file() and last_checkpoint(str(run_dir)) is not None


def test_resume_into_a_read_only_run_folder_is_one_line_and_touches_nothing(capsys, tmp_path,
                                                                          monkeypatch):
    import rlpipe.runs.create as run_module

    run_dir = tmp_path / "run"
    # 64 env steps, before min_samples: no update, just a run folder with final.pt
    assert main(["train", "cartpole-dqn", "--run-dir", str(run_dir)] + SMALL
                + ["--max-env-steps", "64"]) == 0
    capsys.readouterr()
    before = {p: p.stat().st_mtime_ns for p in run_dir.rglob("*") if p.name != LOCK_FILE}

    def read_only(folder, name, cfg):  # what a read-only mount does to the first write
        raise OSError(errno.EROFS, os.strerror(errno.EROFS),
                      str(pathlib.Path(folder) / "config.json"))

    monkeypatch.setattr(run_module, "write_config", read_only)
    err = _one_line_exit_2(["train", "--resume", str(run_dir), "--max-env-steps", "128"], capsys)
    assert str(run_dir) in err and "read-only file system" in err
    # the writer's lock file is taken before the first write; nothing of the run changes
    assert {p: p.stat().st_mtime_ns for p in run_dir.rglob("*") if p.name != LOCK_FILE} == before


def test_only_errors_of_the_run_folder_become_run_folder_errors(tmp_path):
    from rlpipe.runs.folder_errors import RunDirError, run_folder_errors

    run_dir = str(tmp_path / "run")
    with pytest.raises(PermissionError) as info, run_folder_errors(run_dir, created=False):
        raise PermissionError(errno.EACCES, "Permission denied", "/data/set.npz")
    assert not isinstance(info.value, RunDirError) and info.value.run_dir == run_dir
    with pytest.raises(RunDirError) as info, run_folder_errors(run_dir, created=False):
        raise OSError(errno.ENOSPC, "No space left on device")  # a write with no file name
    assert info.value.run_dir == run_dir and info.value.errno == errno.ENOSPC
    with pytest.raises(ValueError) as info, run_folder_errors(run_dir, created=False):
        raise ValueError("something else")
    assert info.value.run_dir == run_dir  # so the CLI can name its checkpoint


def test_when_latest_is_best_pt_the_resumable_checkpoint_is_named(tmp_path):
    ckpt = tmp_path / "run" / "ckpt"
    ckpt.mkdir(parents=True)
    (ckpt / "latest.json").write_text('{"file": "best.pt", "train_iter": 7, "env_step": 90}')
    (ckpt / "best.pt").write_bytes(b"")
    err = FloatingPointError("trainer: 'loss' is nan at train_iter 8.")
    message, _ = explain(err, "train", str(tmp_path / "run"))
    assert "weights only" in message and "start the run again" in message
    (ckpt / "iter_4.pt").write_bytes(b"")  # resume would refuse it: so is it here
    message, _ = explain(err, "train", str(tmp_path / "run"))
    assert "weights only" in message and "iter_4.pt" not in message
    data = io.BytesIO()
    torch.save({"policy": {}, "ctx": {}, "resume": {"state_dir": None},
                "meta": {"train_iter": 5, "env_step": 60}}, data)
    (ckpt / "iter_5.pt").write_bytes(data.getvalue())
    RunDir(tmp_path / "run").write_manifest("iter_5.pt", data.getvalue())
    message, _ = explain(err, "train", str(tmp_path / "run"))
    assert "continues from iter_5.pt" in message and "train_iter 7" in message
    assert last_checkpoint(str(tmp_path / "run")) == (
        ckpt / "iter_5.pt", {"file": "iter_5.pt", "train_iter": 5, "env_step": 60})
