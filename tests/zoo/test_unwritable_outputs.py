"""A folder the user cannot write to (a read-only mount, no permission) is one line naming the
folder and what to do, for `train --resume`, `eval --video` and `export --out`; a data set
whose HDF5 file was cut short names the file and the command that makes it again.

Tests run as root, whom chmod does not stop: writes under the folder are refused in-process
instead, as a read-only file system refuses them (every way rlpipe writes a file: open, os.open,
os.replace/rename, os.mkdir)."""
import builtins
import errno
import io
import os
import pathlib

import pytest

from rlpipe.cli import main

TINY = ["--no-progress", "--max-env-steps", "64", "--set", "replay.min_samples=64",
        "--set", "policy.collect.n_sample=32", "--set", "env.n_envs=2",
        "--set", "env.eval_n_envs=2", "--set", "policy.eval.evaluator.n_episode=2"]


def refuse_writes_under(monkeypatch, folder, code=errno.EROFS):
    """Make every write under `folder` fail with OSError(`code`), naming the file written."""
    folder = os.path.abspath(folder)

    def inside(path):
        if not isinstance(path, (str, bytes, os.PathLike)):
            return False
        path = os.path.abspath(os.fsdecode(path))
        return path == folder or path.startswith(folder + os.sep)

    def deny(path):
        raise OSError(code, os.strerror(code), os.fsdecode(path))

    real_open, real_os_open = builtins.open, os.open

    def fake_open(file, mode="r", *args, **kwargs):
        if any(c in mode for c in "wax+") and inside(file):
            deny(file)
        return real_open(file, mode, *args, **kwargs)

    def fake_os_open(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and inside(path):
            deny(path)
        return real_os_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(io, "open", fake_open)
    monkeypatch.setattr(os, "open", fake_os_open)
    for name in ("replace", "rename", "mkdir", "truncate", "remove", "unlink"):
        real = getattr(os, name)

        def guarded(path, *args, _real=real, **kwargs):
            if inside(path) or (args and inside(args[0])):
                deny(path)
            return _real(path, *args, **kwargs)
        monkeypatch.setattr(os, name, guarded)


@pytest.fixture
def run_dir(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    assert main(["train", "cartpole-dqn", "--run-dir", str(run)] + TINY) == 0
    capsys.readouterr()
    return run


def _one_line(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and "Errno" not in err, err
    assert ".tmp" not in err, err  # the temporary file is not what the user needs
    return err


@pytest.mark.parametrize("code, reason", [(errno.EROFS, "read-only file system"),
                                          (errno.EACCES, "permission denied")])
def test_resume_of_a_read_only_run_says_to_resume_a_copy(run_dir, monkeypatch, capsys, code,
                                                         reason):
    before = {p: p.stat().st_mtime_ns for p in run_dir.rglob("*")}
    refuse_writes_under(monkeypatch, run_dir, code)
    err = _one_line(["train", "--resume", str(run_dir), "--max-env-steps", "128"], capsys)
    assert f"cannot write to the run folder '{run_dir}' ({reason})" in err
    assert f"cp -r {run_dir} COPY && rlpipe train --resume COPY" in err
    assert {p: p.stat().st_mtime_ns for p in run_dir.rglob("*")} == before


def test_videos_into_a_read_only_folder(run_dir, monkeypatch, capsys, tmp_path):
    pytest.importorskip("moviepy")
    videos = tmp_path / "mounted" / "videos"
    videos.parent.mkdir()
    refuse_writes_under(monkeypatch, videos.parent)
    err = _one_line(["eval", str(run_dir), "--video", str(videos)], capsys)
    assert f"cannot write to {videos.parent} (read-only file system): pass --video a folder " \
           f"you can write to" in err


def test_export_into_a_read_only_folder(run_dir, monkeypatch, capsys, tmp_path):
    pytest.importorskip("onnx")
    out = tmp_path / "mounted"
    out.mkdir()
    refuse_writes_under(monkeypatch, out)
    err = _one_line(["export", str(run_dir), "--out", str(out / "policy")], capsys)
    assert f"cannot write to {out} (read-only file system): pass --out a folder you can " \
           f"write to" in err


def test_a_truncated_hdf5_data_set_names_the_file_and_how_to_make_it_again(tmp_path,
                                                                          monkeypatch, capsys):
    pytest.importorskip("minari")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    made = ["dataset", "collect", "random", "--env", "CartPole-v1", "--episodes", "3", "--id",
            "cartpole/cut-v0", "--no-progress"]
    assert main(made) == 0
    capsys.readouterr()
    [data] = pathlib.Path(tmp_path / "minari").rglob("*.hdf5")
    with open(data, "r+b") as f:  # what a full disk or an interrupted copy leaves
        f.truncate(data.stat().st_size // 3)
    rebuild = ("rlpipe dataset collect random --env CartPole-v1 --episodes 3 --id "
               "cartpole/cut-v0 --overwrite")
    for argv in (["dataset", "info", "cartpole/cut-v0"],
                 ["train", "--algo", "dqn", "--dataset", "cartpole/cut-v0", "--run-dir",
                  str(tmp_path / "off"), "--set", "max_train_iter=2", "--no-progress"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert f"{data} cannot be read (damaged or cut short" in err and f"`{rebuild}`" in err
    assert main(rebuild.split()[1:] + ["--no-progress"]) == 0  # the command it names works
    assert main(["dataset", "info", "cartpole/cut-v0"]) == 0
