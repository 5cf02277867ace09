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


def _one_row(logger, **fields):
    from rlpipe.contexts import OnlineRLContext
    ctx = OnlineRLContext()
    for key, value in fields.items():
        setattr(ctx, key, value)
    logger(ctx)
    logger.close()


def test_wandb_online_logger_sends_the_listed_statistics_and_writes_no_file(tmp_path):
    wandb = pytest.importorskip("wandb")
    from rlpipe.middleware import wandb_online_logger
    logger = wandb_online_logger(record_path=tmp_path, project_name="rlpipe-tests",
                                 exp_config={"logger": {"wandb_mode": "offline"}},
                                 metric_list=["loss"])
    _one_row(logger, env_step=64, train_iter=2, eval_value=9.5,
             train_output={"loss": 0.25, "q_mean": 1.5})
    wandb.teardown()
    files, data = _logged(tmp_path)
    assert len(files) == 1 and b"train/loss" in data and b"eval/return_mean" in data
    assert b"train/q_mean" not in data  # not in metric_list
    # the script's online_logger writes the run's files; this one none of them
    assert not (tmp_path / "metrics.jsonl").exists() and not (tmp_path / "tb").exists()


def test_wandb_online_logger_takes_dingengines_switches(tmp_path):
    wandb = pytest.importorskip("wandb")
    import torch
    from rlpipe.middleware import wandb_online_logger
    offline = {"logger": {"wandb_mode": "offline"}}
    with pytest.raises(ValueError, match=r"unknown switch\(es\) \['video'\]"):
        wandb_online_logger(record_path=tmp_path, cfg={"video": True}, exp_config=offline)
    with pytest.raises(ValueError, match="pass model="):
        wandb_online_logger(record_path=tmp_path, cfg={"gradient_logger": True},
                            exp_config=offline)
    switches = {"gradient_logger": True, "plot_logger": False, "video_logger": False,
                "action_logger": False, "return_logger": False}
    logger = wandb_online_logger(record_path=tmp_path, cfg=switches, exp_config=offline,
                                 model=torch.nn.Linear(2, 1))
    _one_row(logger, env_step=64, train_iter=2, eval_value=9.5, train_output={"loss": 0.25})
    wandb.teardown()
    _, data = _logged(tmp_path)
    assert b"eval/return_mean" in data and b"train/loss" not in data  # plot_logger False
