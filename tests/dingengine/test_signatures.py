"""DI-engine's call forms of rlpipe's middleware: logger without config, learner with log_freq,
a reward model or several buffers, GAE into a buffer, a float checkpoint frequency."""
import logging

import numpy as np
import pytest

from rlpipe import ding_init, task
from rlpipe.contexts import OnlineRLContext
from rlpipe.data import ReplayBuffer
from rlpipe.middleware import (CkptSaver, OffPolicyLearner, StepCollector, data_pusher,
                               eps_greedy_handler, gae_estimator, online_logger, read_metrics)


def _collect_into(dqn, *buffers):
    """One collection (32 transitions) pushed into each buffer."""
    with task.start(ctx=OnlineRLContext()):
        task.use(eps_greedy_handler(dqn.cfg))
        task.use(StepCollector(dqn.cfg, dqn.policy.collect_mode, dqn.collector_env))
        for b in buffers:
            task.use(data_pusher(dqn.cfg, b))
        task.run(max_step=1)


def test_online_logger_without_config_and_learner_log_freq(dqn, caplog):
    cfg, policy, buffer_ = dqn.cfg, dqn.policy, dqn.buffer_
    ding_init(cfg)  # cfg.run_dir is set: the logger writes there
    with caplog.at_level(logging.INFO, logger="rlpipe"):
        with task.start(ctx=OnlineRLContext()):
            task.use(eps_greedy_handler(cfg))
            task.use(StepCollector(cfg, policy.collect_mode, dqn.collector_env))
            task.use(data_pusher(cfg, buffer_))
            task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_, log_freq=1))
            task.use(online_logger(train_show_freq=3))
            task.run(max_step=2)
    assert "OffPolicyLearner: train_iter 4" in caplog.text
    assert "online_logger: no config or run_dir given: writing to" in caplog.text
    rows = read_metrics(cfg.run_dir)
    assert [r["train_iter"] for r in rows] == [2, 4] and "train/loss" in rows[0]


class _ConstantReward:
    """A reward model that says every transition earned 1."""

    def __init__(self):
        self.batches = 0

    def estimate(self, batch):
        self.batches += 1
        return {**batch, "reward": np.ones_like(batch["reward"])}


def test_offpolicy_learner_with_a_reward_model(dqn):
    _collect_into(dqn, dqn.buffer_)
    reward_model = _ConstantReward()
    learner = OffPolicyLearner(dqn.cfg, dqn.policy.learn_mode, dqn.buffer_, reward_model)
    ctx = OnlineRLContext()
    learner(ctx)
    assert ctx.train_iter == 2 and reward_model.batches == 2
    assert (ctx.train_data["reward"] == 1).all()
    with pytest.raises(TypeError, match="has no estimate"):
        OffPolicyLearner(dqn.cfg, dqn.policy.learn_mode, dqn.buffer_, reward_model=object())


def test_offpolicy_learner_samples_each_buffer_of_a_list(dqn):
    demo, own = ReplayBuffer(100), ReplayBuffer(100)
    _collect_into(dqn, demo, own)
    learner = OffPolicyLearner(dqn.cfg, dqn.policy.learn_mode, [(demo, 0.25), (own, 0.75)])
    ctx = OnlineRLContext()
    learner(ctx)
    assert ctx.train_iter == 2 and len(ctx.train_data["reward"]) == 4 + 12  # batch_size 16
    empty = OffPolicyLearner(dqn.cfg, dqn.policy.learn_mode, [(ReplayBuffer(10), 0.5), (own, 0.5)])
    empty(OnlineRLContext())
    assert empty.last_decision[0] == 0


def test_offpolicy_learner_refuses_other_multi_buffer_forms(dqn):
    with pytest.raises(TypeError, match=r"not a \(buffer, fraction\) pair"):
        OffPolicyLearner(dqn.cfg, dqn.policy.learn_mode, [ReplayBuffer(10), ReplayBuffer(10)])
    with pytest.raises(TypeError, match="a dict of buffers"):
        OffPolicyLearner(dqn.cfg, dqn.policy.learn_mode, {"a": ReplayBuffer(10)})


def test_gae_estimator_pushes_into_a_buffer(ppo):
    buffer_ = ReplayBuffer(1000)
    with task.start(ctx=OnlineRLContext()):
        task.use(StepCollector(ppo.cfg, ppo.policy.collect_mode, ppo.collector_env))
        task.use(gae_estimator(ppo.cfg, ppo.policy.collect_mode, buffer_))
        task.run(max_step=1)
        assert task.ctx.train_data is None
    assert len(buffer_) == 32
    batch = buffer_.sample(8)
    assert {"adv", "return"} <= set(batch)
    with pytest.raises(TypeError, match="has no push"):
        gae_estimator(ppo.cfg, ppo.policy.collect_mode, object())


def test_ckpt_saver_takes_the_integral_float_termination_checker_takes(dqn, tmp_path):
    assert CkptSaver(dqn.policy, tmp_path, train_freq=1e4).train_freq == 10000
    with pytest.raises(ValueError, match="must be an int >= 1"):
        CkptSaver(dqn.policy, tmp_path, train_freq=1.5)
