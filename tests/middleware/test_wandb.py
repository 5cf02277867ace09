"""`logger.wandb=True`: the W&B sink of online_logger, offline (no network)."""
import glob
import pathlib
import sys

import pytest

from rlpipe.cli import main
from rlpipe.middleware import WandbSink

CFG = {"logger": {"wandb": True, "wandb_mode": "offline", "wandb_project": "rlpipe-tests"},
       "seed": 3}


def _logged(folder):
    files = glob.glob(str(folder / "wandb" / "offline-run-*" / "run-*.wandb"))
    return files, b"".join(pathlib.Path(f).read_bytes() for f in files)


def test_a_resumed_run_logs_to_the_same_wandb_run(tmp_path):
    wandb = pytest.importorskip("wandb")
    sink = WandbSink(CFG, tmp_path)
    sink.log({"eval/return_mean": 12.5}, "env_step", 100)
    sink.close()
    first = (tmp_path / "wandb" / "rlpipe_run_id").read_text()
    sink = WandbSink(CFG, tmp_path)  # as the logger of `rlpipe train --resume` makes it
    sink.log({"train/loss": 0.25}, "env_step", 200)
    sink.close()
    wandb.teardown()  # wait for W&B's service to write its files
    files, data = _logged(tmp_path)
    assert (tmp_path / "wandb" / "rlpipe_run_id").read_text() == first
    assert len(files) == 2 and all(f.endswith(f"run-{first}.wandb") for f in files)
    assert b"eval/return_mean" in data and b"train/loss" in data and b"rlpipe-tests" in data


def test_a_bad_mode_and_a_missing_wandb_are_one_line_errors(tmp_path, capsys, monkeypatch):
    with pytest.raises(ValueError, match="logger.wandb_mode='later'"):
        WandbSink({"logger": {"wandb": True, "wandb_mode": "later"}}, tmp_path)
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb now fails
    assert main(["train", "cartpole-dqn", "--run-dir", str(tmp_path / "run"), "--no-progress",
                 "--max-env-steps", "64", "--set", "logger.wandb=True"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and 'pip install "rlpipe[wandb]"' in err[0], err
