"""Current DI-engine signatures accepted beside the guide's: the guide's pipelines written the
way current DI-engine scripts write them."""
import logging
import pathlib
import threading

import pytest

from rlpipe import task
from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import Role
from rlpipe.engine.testing import EventLog
from rlpipe.middleware import (CkptSaver, OffPolicyLearner, StepCollector, data_pusher,
                               eps_greedy_handler, gae_estimator, interaction_evaluator,
                               multistep_trainer)


def test_offpolicy_script_in_current_dingengine_form(dqn, tmp_path):
    cfg, policy, buffer_ = dqn.cfg, dqn.policy, dqn.buffer_
    collector_env, evaluator_env = dqn.collector_env, dqn.evaluator_env
    save_dir = tmp_path / "exp"
    with task.start(async_mode=True, n_async_workers=3, ctx=OnlineRLContext()):
        assert task.running
        if task.has_role(task.role.LEARNER) and task.has_role(Role.FETCHER):  # no role set: all
            task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
            task.use(eps_greedy_handler(cfg))
            task.use(StepCollector(cfg, policy.collect_mode, collector_env))
            task.use(data_pusher(cfg, buffer_, group_by_env=True))
            task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_), lock=True)
            task.use(CkptSaver(policy, save_dir, train_freq=100), lock=True)
        task.run(max_step=100000)
    assert not task.running
    assert (save_dir / "ckpt" / "final.pt").is_file()
    sample = buffer_.sample(64)
    assert set(sample["env_id"].tolist()) == {0, 1}  # group_by_env: each row names its env


def test_ckpt_saver_save_dir_by_name_and_conflicts(dqn, tmp_path):
    saver = CkptSaver(policy=dqn.policy, save_dir=tmp_path / "a", train_freq=10)
    assert saver.ckpt_dir == tmp_path / "a" / "ckpt" and saver.train_freq == 10
    with pytest.raises(TypeError, match="save_dir twice"):
        CkptSaver(dqn.policy, tmp_path / "a", save_dir=tmp_path / "b")
    with pytest.raises(ValueError, match="two names for the run folder"):
        CkptSaver(dqn.cfg, dqn.policy, save_dir=tmp_path / "a", run_dir=tmp_path / "b")


def test_onpolicy_script_with_multistep_trainer_policy_log_freq(ppo, caplog):
    cfg, policy = ppo.cfg, ppo.policy
    collector_env, evaluator_env = ppo.collector_env, ppo.evaluator_env
    with caplog.at_level(logging.INFO, logger="rlpipe.middleware"):
        with task.start(async_mode=False, ctx=OnlineRLContext()):
            task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
            task.use(StepCollector(cfg, policy.collect_mode, collector_env))
            task.use(gae_estimator(cfg, policy.collect_mode))
            task.use(multistep_trainer(policy.learn_mode, log_freq=1))
            task.use(CkptSaver(policy, cfg.run_dir, train_freq=100))
            task.run(max_step=100000)
    assert "multistep_trainer: train_iter" in caplog.text
    assert pathlib.Path(cfg.run_dir, "ckpt", "final.pt").is_file()
    with pytest.raises(ValueError, match="log_freq"):
        multistep_trainer(policy.learn_mode, log_freq=0)


def test_lock_keeps_two_guide_middleware_apart_in_async_mode():
    log = EventLog()
    a = log.middleware("collect", writes=("trajectories",), sleep=0.05)
    b = log.middleware("learn", reads=("train_iter",), writes=("train_output",), sleep=0.05)
    shared = threading.Lock()
    with task.start(async_mode=True, n_async_workers=2, ctx=OnlineRLContext()):
        task.use(a, lock=shared)
        task.use(b, lock=shared)
        task.run(max_step=3)
    assert not log.overlapped("collect", "learn")
