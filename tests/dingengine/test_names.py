"""DI-engine's names that its example scripts import, as rlpipe provides them."""
import logging
import pickle
import random
import sys

import h5py
import numpy as np
import pytest
import torch

from rlpipe import ding_init, set_pkg_seed, task
from rlpipe.contexts import OfflineRLContext, OnlineRLContext
from rlpipe.middleware import (ContextExchanger, ModelExchanger, StepCollector, eps_greedy_masker,
                               final_ctx_saver, offline_data_saver, offline_logger, read_metrics,
                               wandb_offline_logger)


def test_set_pkg_seed_repeats_python_numpy_and_torch_draws():
    draws = []
    for _ in range(2):
        set_pkg_seed(7, use_cuda=False)
        draws.append((random.random(), np.random.rand(), torch.rand(()).item()))
    assert draws[0] == draws[1]
    with pytest.raises(TypeError, match="must be an int"):
        set_pkg_seed("7")


def test_ding_init_seeds_and_names_the_run_folder(dqn, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = dqn.cfg
    cfg.run_dir, cfg.exp_name, cfg.seed = None, "cartpole_dqn_seed3", 3
    folder = ding_init(cfg)
    assert str(folder) == cfg.run_dir == "runs/cartpole_dqn_seed3"
    first = torch.rand(()).item()
    set_pkg_seed(3)
    assert torch.rand(()).item() == first  # ding_init seeded with cfg.seed


def test_router_is_inactive_in_a_single_process_and_its_blocks_are_skipped(caplog):
    assert task.router.is_active is False and task.router.node_id == 0
    with caplog.at_level(logging.INFO, logger="rlpipe.middleware"):
        context_sync, model_sync = ContextExchanger(skip_n_iter=1), ModelExchanger(torch.nn.Linear(1, 1))
    assert "ContextExchanger: a single-process run" in caplog.text
    assert "ModelExchanger: a single-process run" in caplog.text
    ctx = OnlineRLContext()
    context_sync(ctx), model_sync(ctx)
    assert ctx == OnlineRLContext()  # nothing changed


def test_context_has_attr():
    assert OnlineRLContext().has_attr("env_step")
    assert not OfflineRLContext().has_attr("env_step")


def test_greedy_collection_saved_as_demonstrations_with_final_result(dqn, tmp_path):
    cfg, policy, buffer_ = dqn.cfg, dqn.policy, dqn.buffer_
    path = tmp_path / "demo.hdf5"
    with task.start(ctx=OnlineRLContext()):
        task.use(eps_greedy_masker())
        task.use(StepCollector(cfg, policy.collect_mode, dqn.collector_env))
        task.use(offline_data_saver(path, data_type="hdf5"))
        task.use(final_ctx_saver(tmp_path / "exp"))
        task.run(max_step=1)
        assert task.ctx.collect_kwargs["eps"] == 0.0
    with h5py.File(path, "r") as f:
        assert len(f["reward"]) == 32 and f["obs"].shape == (32, 4)
    with open(tmp_path / "exp" / "result.pkl", "rb") as f:
        result = pickle.load(f)
    assert result["env_step"] == 32 and result["train_iter"] == 0
    with pytest.raises(ValueError, match="choose 'hdf5', 'npz'"):
        offline_data_saver(path, data_type="csv")


def test_offline_logger_without_config_writes_under_runs_and_says_where(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("rlpipe._script._run_dir", None)
    monkeypatch.setattr(sys, "argv", ["cql_example.py"])
    with caplog.at_level(logging.INFO, logger="rlpipe._script"):
        logger = offline_logger()
    assert f"writing to {tmp_path / 'runs' / 'cql_example'}" in caplog.text
    ctx = OfflineRLContext()
    ctx.train_iter, ctx.train_output = 5, {"loss": 0.5}
    logger(ctx)
    logger.close()
    assert read_metrics(tmp_path / "runs" / "cql_example")[0]["train/loss"] == 0.5


def test_wandb_offline_logger_names_the_extra_when_wandb_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)
    with pytest.raises(ImportError, match=r'pip install "rlpipe\[wandb\]"'):
        wandb_offline_logger(project_name="p")


def test_wandb_offline_logger_sends_the_rows_to_wandb(tmp_path, caplog):
    wandb = pytest.importorskip("wandb")
    with caplog.at_level(logging.INFO, logger="rlpipe.middleware"):
        logger = wandb_offline_logger(record_path=tmp_path, project_name="rlpipe-tests",
                                      exp_config={"seed": 3, "logger": {"wandb_mode": "offline"}},
                                      metric_list=["loss"], anonymous=True)
    assert "not applied (DI-engine plot options): anonymous, metric_list" in caplog.text
    ctx = OfflineRLContext()
    ctx.train_iter, ctx.train_output = 3, {"loss": 0.25}
    logger(ctx)
    logger.close()
    wandb.teardown()  # wait for W&B's service to write its files
    data = b"".join(p.read_bytes() for p in tmp_path.glob("wandb/offline-run-*/run-*.wandb"))
    assert b"train/loss" in data and b"rlpipe-tests" in data
