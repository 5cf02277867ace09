"""The one learning path: OffPolicyLearner = fetcher + the one trainer + the buffer's UpdateSchedule."""
import logging

import numpy as np
import pytest
from easydict import EasyDict

from rlpipe.contexts import OnlineRLContext
from rlpipe.data import PrioritizedReplayBuffer, ReplayBuffer, UpdateSchedule
from rlpipe.engine import Task, contract, contract_of
from rlpipe.middleware import OffPolicyLearner, StepCollector, data_pusher

from .fakes import FakeCollectPolicy, FakeEnvManager, FakeLearnPolicy


def cfg(update_per_collect=3, batch_size=4, n_sample=6, min_samples=0, ratio=None):
    return EasyDict(dict(
        policy=dict(collect=dict(n_sample=n_sample, random_collect_size=0),
                    learn=dict(batch_size=batch_size, update_per_collect=update_per_collect)),
        replay=dict(min_samples=min_samples, max_updates_per_step=ratio)))


def rows(n, start=0):
    return {"obs": np.arange(start, start + n, dtype=np.float32)[:, None],
            "reward": np.ones(n, np.float32)}


def test_the_learner_runs_its_fetcher_around_the_one_trainer():
    order = []

    @contract(writes=("train_data",), reads_after=("train_output",))
    def fetcher(ctx):
        order.append("fetch")
        ctx.train_data = {"reward": np.ones(4)}
        yield
        order.append(("after", ctx.train_output["loss"]))

    class Policy(FakeLearnPolicy):
        def forward(self, batch):
            order.append("train")
            return super().forward(batch)

    buffer_ = ReplayBuffer(100, seed=0)
    buffer_.push(rows(10))
    ctx = OnlineRLContext()
    OffPolicyLearner(cfg(update_per_collect=2), Policy(), buffer_, fetcher=fetcher)(ctx)
    assert order == ["fetch", "train", ("after", 0.5)] * 2
    assert ctx.train_iter == 2 and ctx.train_output == {"loss": 0.5, "q_mean": 1.0}


def test_priorities_reach_the_buffer_through_the_fetcher():
    buffer_ = PrioritizedReplayBuffer(100, seed=0)
    buffer_.push(rows(20))
    before = buffer_.priorities().copy()
    ctx = OnlineRLContext()
    OffPolicyLearner(cfg(), FakeLearnPolicy(), buffer_)(ctx)  # the fake returns priority 2.0
    after = buffer_.priorities()
    assert (after != before).any() and np.isclose(after[after != before], (2.0 + 1e-6) ** 0.6).all()
    assert "priority" not in ctx.train_output  # the mean holds scalars only


def test_the_schedule_decides_and_says_why():
    schedule = UpdateSchedule(min_samples=10, max_updates_per_step=0.25)
    buffer_ = ReplayBuffer(100, seed=0, controller=schedule)
    learner = OffPolicyLearner(cfg(update_per_collect=3, batch_size=4), FakeLearnPolicy(), buffer_)
    assert (schedule.per_iteration, schedule.batch_size) == (3, 4)  # filled from the config
    ctx = OnlineRLContext()
    buffer_.push(rows(8))
    learner(ctx)
    assert ctx.train_iter == 0 and learner.last_decision[1].startswith("0 updates: warm-up, 8 of")
    buffer_.push(rows(12))  # 20 inserted: 5 allowed by the ratio, 3 by update_per_collect
    learner(ctx)
    assert ctx.train_iter == 3 and learner.last_decision == (3, "3 updates: update_per_collect")
    learner(ctx)
    assert ctx.train_iter == 5 and learner.last_decision[0] == 2
    assert learner.last_decision[1].startswith("2 updates: ratio cap")
    assert schedule.sampled == 5


def test_warm_up_and_start_of_training_are_logged_once(caplog):
    buffer_ = ReplayBuffer(100, seed=0, controller=UpdateSchedule(min_samples=10))
    learner = OffPolicyLearner(cfg(), FakeLearnPolicy(), buffer_)
    with caplog.at_level(logging.INFO, logger="rlpipe"):
        for n in (4, 4, 4, 4):
            buffer_.push(rows(n))
            learner(OnlineRLContext())
    lines = [r.getMessage() for r in caplog.records if r.name == "rlpipe.middleware.learner"]
    assert lines == ["OffPolicyLearner: waiting: 0 updates: warm-up, 4 of min_samples 10 inserted",
                     "OffPolicyLearner: training starts: 3 updates: update_per_collect"]


def test_a_buffer_without_schedule_gets_update_per_collect_and_the_batch_rule():
    buffer_ = ReplayBuffer(100, seed=0)
    buffer_.push(rows(3))
    learner = OffPolicyLearner(cfg(batch_size=4), FakeLearnPolicy(), buffer_)
    ctx = OnlineRLContext()
    learner(ctx)
    assert ctx.train_iter == 0 and ctx.train_output is None
    assert "holds 3 rows, fewer than batch_size 4" in learner.last_decision[1]
    buffer_.push(rows(1))
    learner(ctx)
    assert ctx.train_iter == 3


def test_a_schedule_made_for_another_config_is_refused():
    buffer_ = ReplayBuffer(100, controller=UpdateSchedule.from_config(cfg(update_per_collect=8)))
    with pytest.raises(ValueError, match=r"OffPolicyLearner: .*per_iteration=8 .*update_per_collect is 3"):
        OffPolicyLearner(cfg(update_per_collect=3), FakeLearnPolicy(), buffer_)


def test_the_learner_reads_no_collector_field():
    c = contract_of(OffPolicyLearner(cfg(), FakeLearnPolicy(), ReplayBuffer(10)))
    assert c.reads == {"train_iter"} and c.writes == {"train_iter", "train_output", "train_data"}


@pytest.mark.parametrize("async_mode", [False, True])
def test_zoo_schedule_runs_update_per_collect_per_iteration_after_warm_up(async_mode):
    config = cfg(update_per_collect=3, batch_size=4, n_sample=6, min_samples=12)
    buffer_ = ReplayBuffer(1000, seed=0, controller=UpdateSchedule.from_config(config))
    learn = FakeLearnPolicy()
    t = Task()
    with t.start(async_mode=async_mode, ctx=OnlineRLContext()):
        t.use(StepCollector(config, FakeCollectPolicy(), FakeEnvManager(n_envs=2, length=5)))
        t.use(data_pusher(config, buffer_))
        learner = OffPolicyLearner(config, learn, buffer_)
        t.use(learner)
        t.run(max_step=6)
        ctx = t.ctx
    # 36 steps inserted; ratio 3/6 allows 18 updates, none before 12 inserted
    assert buffer_.controller.inserted == 36
    assert ctx.train_iter == len(learn.batches) == buffer_.controller.sampled
    if not async_mode:  # the pusher ran before the learner each iteration: 0, 3, 3, 3, 3, 3
        assert ctx.train_iter == 15
    assert ctx.train_iter <= 18


def test_a_run_log_says_why_the_learner_waited_and_when_it_started(tmp_path, capsys):
    from rlpipe.cli import main

    run_dir = tmp_path / "run"
    overrides = {"replay.min_samples": 512, "policy.collect.random_collect_size": 0,
                 "policy.learn.update_per_collect": 4, "policy.eval.evaluator.n_episode": 1}
    sets = [arg for key, value in overrides.items() for arg in ("--set", f"{key}={value}")]
    argv = ["train", "cartpole-dqn", "--max-env-steps", "768", "--run-dir", str(run_dir), "--no-progress"]
    assert main(argv + sets) == 0
    log = (run_dir / "log.txt").read_text()
    # 256 env steps per iteration: the first waits, the second trains
    assert "OffPolicyLearner: waiting: 0 updates: warm-up, 256 of min_samples 512 inserted" in log
    assert "OffPolicyLearner: training starts: 4 updates: update_per_collect" in log
    assert log.count("OffPolicyLearner:") == 2
