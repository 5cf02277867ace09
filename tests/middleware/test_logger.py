"""online_logger: metrics.jsonl rows on the env-step axis, TensorBoard read-back, append on resume."""
import json
import math
import time

import numpy as np
import pytest
import torch
from easydict import EasyDict

from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import _current, contract_of
from rlpipe.middleware.logger import online_logger, read_metrics


class FakeTask:
    finish = False


@pytest.fixture
def running():
    task = FakeTask()
    _current.set_running(task)
    yield task
    _current.set_running(None)


def _run(log, n_iter, start_env_step=0, start_iter=0, eval_every=3):
    """Drive `log` like a pipeline: 10 env steps and 2 train iterations per iteration."""
    ctx = OnlineRLContext()
    ctx.env_step, ctx.train_iter = start_env_step, start_iter
    for i in range(n_iter):
        ctx.env_step += 10
        ctx.train_iter += 2
        ctx.train_output = [
            {"loss": np.float32(1.0 + i), "q": torch.tensor(2.0), "priority": np.ones(4)},
            {"loss": 3.0 + i, "q": float("nan"), "grad_norm": torch.tensor([0.5])},
        ]
        if i % eval_every == 0:
            ctx.eval_value = float(i)
        if i % 2 == 1:
            ctx.episode_info = [{"return": 10.0, "length": 10}, {"return": np.float64(20.0), "length": 30}]
        ctx.info_for_logging = {"eps": 0.5, "bad": "text", "inf": math.inf}
        log(ctx)
        ctx = ctx.renew()
    return ctx


def test_metrics_rows_and_step_axis(tmp_path, running):
    log = online_logger(EasyDict(run_dir=str(tmp_path)), tensorboard=False)
    _run(log, 4)
    log.close()
    rows = read_metrics(tmp_path)
    assert [r["env_step"] for r in rows] == [10, 20, 30, 40]
    assert [r["train_iter"] for r in rows] == [2, 4, 6, 8]
    assert [r["total_step"] for r in rows] == [0, 1, 2, 3]
    first, second = rows[0], rows[1]
    assert first["train/loss"] == pytest.approx(2.0)  # mean of 1.0 and 3.0 over the list
    assert first["train/q"] == pytest.approx(2.0)  # the nan is skipped, not averaged
    assert first["train/grad_norm"] == pytest.approx(0.5)
    assert "train/priority" not in first  # not a scalar
    assert first["eval/return_mean"] == 0.0 and "eval/return_mean" not in second
    assert "collect/episode_return_mean" not in first
    assert second["collect/episode_return_mean"] == pytest.approx(15.0)
    assert second["collect/episode_length_mean"] == pytest.approx(20.0)
    assert second["collect/episodes"] == 2
    assert first["eps"] == 0.5 and "bad" not in first and "inf" not in first
    assert first["time"] > 1e9 and 0 <= first["wall_time"] <= rows[-1]["wall_time"]
    # every line is a plain JSON object
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 4 and all(isinstance(json.loads(line), dict) for line in lines)


def test_tensorboard_read_back(tmp_path, running):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    log = online_logger(run_dir=tmp_path)
    _run(log, 6)
    log.close()
    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    tags = acc.Tags()["scalars"]
    assert {"train/loss", "eval/return_mean", "collect/episode_return_mean", "eps"} <= set(tags)
    loss = acc.Scalars("train/loss")
    assert [e.step for e in loss] == [10, 20, 30, 40, 50, 60]
    assert [e.value for e in loss] == pytest.approx([2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    evals = acc.Scalars("eval/return_mean")
    assert [(e.step, e.value) for e in evals] == [(10, 0.0), (40, 3.0)]


def test_append_on_resume(tmp_path, running):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    log = online_logger(run_dir=tmp_path)
    ctx = _run(log, 3)
    log.close()
    # A crash tore the last row: the resumed logger starts on a fresh line.
    with open(tmp_path / "metrics.jsonl", "a") as f:
        f.write('{"env_step": 99, "trai')
    log = online_logger(run_dir=tmp_path)
    _run(log, 2, start_env_step=ctx.env_step, start_iter=ctx.train_iter)
    log.close()
    rows = read_metrics(tmp_path)
    assert [r["env_step"] for r in rows] == [10, 20, 30, 40, 50]
    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    assert [e.step for e in acc.Scalars("train/loss")] == [10, 20, 30, 40, 50]


def test_train_show_freq_averages_between_shows(tmp_path, running):
    log = online_logger(run_dir=tmp_path, train_show_freq=4, tensorboard=False)
    ctx = OnlineRLContext()
    for i in range(6):
        ctx.train_iter = 2 * (i + 1)
        ctx.env_step = 10 * (i + 1)
        ctx.train_output = {"loss": float(i)}
        log(ctx)
        ctx = ctx.renew()
    log.close()
    rows = read_metrics(tmp_path)
    # shown at train_iter 2 (first), 6 (mean of iters 4, 6) and 10 (mean of 8, 10)
    assert [(r["train_iter"], r["train/loss"]) for r in rows] == [(2, 0.0), (6, 1.5), (10, 3.5)]


def test_flushed_at_finish_before_close(tmp_path, running):
    log = online_logger(run_dir=tmp_path, tensorboard=False)
    ctx = OnlineRLContext()
    ctx.train_output = {"loss": 1.0}
    log(ctx)
    assert read_metrics(tmp_path) == []  # buffered, not flushed every step
    running.finish = True
    log(ctx.renew())
    assert len(read_metrics(tmp_path)) == 1  # the renewed ctx has no train output
    log.close()
    log.close()  # idempotent


def test_nothing_to_log_writes_no_row(tmp_path, running):
    log = online_logger(run_dir=tmp_path, tensorboard=False)
    log(OnlineRLContext())
    log.close()
    assert read_metrics(tmp_path) == []


def test_run_dir_required_with_a_config(running):
    with pytest.raises(ValueError, match="cfg.run_dir"):
        online_logger(EasyDict(seed=0))


def test_no_config_and_no_run_dir_writes_to_a_default_folder(tmp_path, monkeypatch, running):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("rlpipe._script._run_dir", None)
    monkeypatch.setattr("sys.argv", ["train_dqn.py"])
    log = online_logger()
    log.close()
    assert log.run_dir.resolve() == tmp_path / "runs" / "train_dqn"


def test_cfg_can_turn_tensorboard_off(tmp_path, running):
    log = online_logger(EasyDict(run_dir=str(tmp_path), logger={"tensorboard": False}))
    _run(log, 2)
    log.close()
    assert not (tmp_path / "tb").exists()
    assert len(read_metrics(tmp_path)) == 2


def test_contract_reads_only(tmp_path):
    log = online_logger(run_dir=tmp_path, tensorboard=False)
    c = contract_of(log)
    log.close()
    assert c.writes == frozenset()
    assert {"train_output", "eval_value", "info_for_logging"} <= c.reads
    # read where the context has them (an OfflineRLContext has neither)
    assert {"env_step", "episode_info"} <= c.optional_reads


def test_an_offline_context_logs_on_the_train_iter_axis(tmp_path, running):
    from rlpipe.contexts import OfflineRLContext

    log = online_logger(run_dir=tmp_path, tensorboard=False)
    ctx = OfflineRLContext(train_iter=7, train_output={"loss": 0.5})
    log(ctx)
    log.close()
    (row,) = read_metrics(tmp_path)
    assert row["train_iter"] == 7 and row["train/loss"] == 0.5 and "env_step" not in row


def test_resume_from_an_earlier_step_hides_later_tb_events(tmp_path, running):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    log = online_logger(run_dir=tmp_path)
    _run(log, 6)  # logged up to env_step 60, but the last checkpoint was at env_step 30
    log.close()
    time.sleep(0.6)  # a resumed session starts later
    log = online_logger(run_dir=tmp_path)
    _run(log, 2, start_env_step=30, start_iter=6)
    log.close()
    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    assert [e.step for e in acc.Scalars("train/loss")] == [10, 20, 30, 40, 50]
    rows = read_metrics(tmp_path)
    assert [r["env_step"] for r in rows] == [10, 20, 30, 40, 50]
    assert len(read_metrics(tmp_path, keep_replaced=True)) == 8


@pytest.mark.parametrize("async_mode", [False, True])
def test_through_a_task(tmp_path, async_mode):
    from rlpipe.engine import Task, contract

    @contract(reads=("env_step",), writes=("env_step", "episode_info"))
    def collect(ctx):
        ctx.env_step += 10
        ctx.episode_info = [{"return": float(ctx.env_step), "length": 10}]

    @contract(reads=("train_iter",), writes=("train_iter", "train_output"))
    def learn(ctx):
        ctx.train_iter += 1
        ctx.train_output = {"loss": 1.0 / ctx.train_iter}

    with Task().start(async_mode=async_mode, ctx=OnlineRLContext()) as task:
        task.use(collect)
        task.use(learn)
        task.use(online_logger(run_dir=tmp_path, tensorboard=False))
        task.run(max_step=5)
    rows = read_metrics(tmp_path)
    assert [r["env_step"] for r in rows] == [10, 20, 30, 40, 50]
    assert [r["collect/episode_return_mean"] for r in rows] == [10.0, 20.0, 30.0, 40.0, 50.0]
    assert rows[-1]["train/loss"] == pytest.approx(0.2)


def test_rows_reach_the_disk_before_a_checkpoint_is_declared(tmp_path):
    """With a real Task: the logger flushes (and fsyncs) when the saver emits CHECKPOINT_EVENT,
    although its periodic flush is far away, so a checkpoint's log length covers its rows."""
    from rlpipe.engine import Task
    from rlpipe.runs import CHECKPOINT_EVENT, RunDir

    task = Task()
    log = online_logger(EasyDict(run_dir=str(tmp_path)), tensorboard=True)
    log.flush_secs = 3600.0
    task.use(log)  # attach(): listens for the checkpoint event
    _current.set_running(task)
    try:
        _run(log, 3)
        on_disk = (tmp_path / "metrics.jsonl").stat().st_size
        task.emit(CHECKPOINT_EVENT, None)
        lengths = RunDir(tmp_path).log_lengths()
    finally:
        _current.set_running(None)
    assert on_disk == 0  # still buffered before the event
    assert lengths["metrics.jsonl"] == (tmp_path / "metrics.jsonl").stat().st_size > 0
    assert [r["env_step"] for r in read_metrics(tmp_path)] == [10, 20, 30]
    log.close()
    task.emit(CHECKPOINT_EVENT, None)  # a closed logger no longer listens


@pytest.mark.parametrize("async_mode", [False, True])
def test_a_checkpoint_covers_its_own_row_even_with_the_logger_after_the_saver(tmp_path, async_mode):
    """Saver before logger (or beside it in async mode): the checkpoint makes the logger write
    the iteration's row first, and the logger's own call then adds no duplicate."""
    from rlpipe.engine import Task
    from rlpipe.middleware import CkptSaver
    from rlpipe.runs import RunDir

    class Policy:
        def __init__(self):
            self.net = torch.nn.Linear(2, 2)

        def state_dict(self):
            return {"net": self.net.state_dict()}

    def step(ctx):
        ctx.env_step += 10
        ctx.train_iter += 1
        ctx.train_output = {"loss": 1.0}

    cfg = EasyDict(run_dir=str(tmp_path))
    task = Task()
    with task.start(async_mode=async_mode, ctx=OnlineRLContext()):
        task.use(step)
        task.use(CkptSaver(cfg, Policy(), train_freq=2, save_best=False))
        task.use(online_logger(cfg, tensorboard=False))
        task.run(max_step=7)
    run = RunDir(tmp_path)
    steps = [r["env_step"] for r in read_metrics(tmp_path)]
    assert steps == [10, 20, 30, 40, 50, 60, 70]  # one row per iteration, none twice
    for name in ("iter_6.pt", "final.pt"):
        manifest = json.loads(run.manifest(name).read_text())
        covered = run.metrics.read_bytes()[: manifest["logs"]["metrics.jsonl"]].decode()
        assert json.loads(covered.splitlines()[-1])["env_step"] == manifest["meta"]["env_step"]
