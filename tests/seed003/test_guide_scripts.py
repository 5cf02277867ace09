"""The guide's two pipelines, their lines verbatim (only imports changed)."""
import pathlib

from rlpipe import task
from rlpipe.contexts import OnlineRLContext
from rlpipe.middleware import (CkptSaver, OffPolicyLearner, StepCollector, data_pusher,
                               eps_greedy_handler, gae_estimator, interaction_evaluator,
                               multistep_trainer)


def test_offpolicy_script(dqn):
    cfg, policy, buffer_ = dqn.cfg, dqn.policy, dqn.buffer_
    collector_env, evaluator_env = dqn.collector_env, dqn.evaluator_env
    # ---- verbatim from the seed ----
    with task.start(async_mode=False, ctx=OnlineRLContext()):
        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(eps_greedy_handler(cfg))
        task.use(StepCollector(cfg, policy.collect_mode, collector_env))
        task.use(data_pusher(cfg, buffer_))
        task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
        task.use(CkptSaver(cfg, policy, train_freq=100))
        task.run(max_step=100000)
    # ---- end ----
        assert task.ctx.env_step == 32 and task.ctx.train_iter == 2
    assert len(buffer_) == 32
    assert pathlib.Path(cfg.run_dir, "ckpt", "final.pt").is_file()


def test_onpolicy_script(ppo):
    cfg, policy = ppo.cfg, ppo.policy
    collector_env, evaluator_env = ppo.collector_env, ppo.evaluator_env
    # ---- verbatim from the seed ----
    with task.start(async_mode=False, ctx=OnlineRLContext()):
        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(StepCollector(cfg, policy.collect_mode, collector_env))
        task.use(gae_estimator(cfg, policy.collect_mode))
        task.use(multistep_trainer(cfg, policy.learn_mode))
        task.use(CkptSaver(cfg, policy, train_freq=100))
        task.run(max_step=100000)
    # ---- end ----
        assert task.ctx.env_step == 32 and task.ctx.train_iter >= 1
        assert task.ctx.eval_value >= 0
