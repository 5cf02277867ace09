"""Ports of DI-engine's `ding/example/dqn.py` and `ding/example/ppo.py`, written in their
structure: only the imports and the construction of the config, envs, model and buffer are
rlpipe's. Tiny budgets (a few hundred CartPole steps); `tiny_cfg` shrinks the zoo's config."""
import logging

import numpy as np
import torch

from rlpipe import ding_init, set_pkg_seed, task
from rlpipe.contexts import OnlineRLContext
from rlpipe.data import ReplayBuffer
from rlpipe.envs import EnvManager
from rlpipe.middleware import (CkptSaver, ContextExchanger, ModelExchanger, OffPolicyLearner,
                               StepCollector, data_pusher, eps_greedy_handler, gae_estimator,
                               interaction_evaluator, multistep_trainer, online_logger,
                               read_metrics, termination_checker)
from rlpipe.models import ActorCritic, QNetwork
from rlpipe.policies import DQNPolicy, PPOPolicy
from rlpipe.zoo import get_entry


def tiny_cfg(entry, run_dir):
    cfg = get_entry(entry).resolve()
    cfg.run_dir = str(run_dir)
    cfg.env.n_envs, cfg.env.eval_n_envs = 2, 2
    cfg.policy.collect.n_sample = 32
    cfg.policy.collect.random_collect_size = 0
    cfg.policy.learn.batch_size = 16
    cfg.policy.learn.update_per_collect = 2
    cfg.policy.eval.evaluator.eval_freq = 4
    cfg.policy.eval.evaluator.n_episode = 2
    if "epoch_per_collect" in cfg.policy.learn:
        cfg.policy.learn.epoch_per_collect = 1
    return cfg


def dqn_main(cfg, async_mode=False):
    """DI-engine's dqn.py, in its order."""
    logging.getLogger().setLevel(logging.INFO)
    ding_init(cfg)
    with task.start(async_mode=async_mode, ctx=OnlineRLContext()):
        collector_env = EnvManager(cfg.env.id, n_envs=cfg.env.n_envs, seed=cfg.seed)
        evaluator_env = EnvManager(cfg.env.id, n_envs=cfg.env.eval_n_envs, seed=cfg.seed)

        set_pkg_seed(cfg.seed, use_cuda=False)

        model = QNetwork(collector_env.observation_space, collector_env.action_space.n,
                         **cfg.policy.model)
        buffer_ = ReplayBuffer(cfg.replay.capacity)
        policy = DQNPolicy(cfg.policy, model=model)

        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(eps_greedy_handler(cfg))
        task.use(StepCollector(cfg, policy.collect_mode, collector_env))
        task.use(data_pusher(cfg, buffer_))
        task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
        task.use(CkptSaver(cfg, policy, train_freq=100))
        task.use(online_logger(train_show_freq=1))
        task.use(termination_checker(max_env_step=cfg.max_env_step))
        task.run()
    collector_env.close()
    evaluator_env.close()
    return policy


def ppo_main(cfg, async_mode=False):
    """DI-engine's ppo.py, in its order (its distributed block included)."""
    logging.getLogger().setLevel(logging.INFO)
    ding_init(cfg)
    with task.start(async_mode=async_mode, ctx=OnlineRLContext()):
        collector_env = EnvManager(cfg.env.id, n_envs=cfg.env.n_envs, seed=cfg.seed)
        evaluator_env = EnvManager(cfg.env.id, n_envs=cfg.env.eval_n_envs, seed=cfg.seed)

        set_pkg_seed(cfg.seed, use_cuda=False)

        model = ActorCritic(collector_env.observation_space, collector_env.action_space,
                            hidden=cfg.policy.model.hidden)
        policy = PPOPolicy(cfg.policy, model=model)

        if task.router.is_active:
            if task.router.node_id == 0:
                task.add_role(task.role.LEARNER)
            elif task.router.node_id == 1:
                task.add_role(task.role.EVALUATOR)
            else:
                task.add_role(task.role.COLLECTOR)
            task.use(ContextExchanger(skip_n_iter=1))
            task.use(ModelExchanger(model))

        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(StepCollector(cfg, policy.collect_mode, collector_env))
        task.use(gae_estimator(cfg, policy.collect_mode))
        task.use(multistep_trainer(policy.learn_mode, log_freq=50))
        task.use(CkptSaver(policy, cfg.run_dir, train_freq=100))
        task.use(online_logger(train_show_freq=3))
        task.use(termination_checker(max_env_step=cfg.max_env_step))
        task.run()
    collector_env.close()
    evaluator_env.close()
    return policy


def _rows(run_dir):
    return [{k: v for k, v in row.items() if k not in ("time", "wall_time")}
            for row in read_metrics(run_dir)]


def test_dqn_example_runs_and_repeats_exactly_when_seeded_as_dingengine_seeds(tmp_path):
    runs = []
    for k in range(2):
        cfg = tiny_cfg("cartpole-dqn", tmp_path / f"run{k}")
        cfg.max_env_step = 192
        policy = dqn_main(cfg)
        runs.append((_rows(cfg.run_dir), policy.online.state_dict()))
    (rows_a, weights_a), (rows_b, weights_b) = runs
    assert rows_a[-1]["env_step"] == 192 and rows_a[-1]["train_iter"] == 12
    assert any("eval/return_mean" in r for r in rows_a) and any("train/loss" in r for r in rows_a)
    assert rows_a == rows_b  # the same losses, episode returns and evaluations
    assert all(torch.equal(weights_a[k], weights_b[k]) for k in weights_a)
    assert (tmp_path / "run0" / "ckpt" / "final.pt").is_file()


def test_ppo_example_runs_with_its_distributed_block_skipped(tmp_path):
    cfg = tiny_cfg("cartpole-ppo", tmp_path / "run")
    cfg.max_env_step = 128
    policy = ppo_main(cfg)
    rows = read_metrics(cfg.run_dir)
    assert rows[-1]["env_step"] == 128 and rows[-1]["train_iter"] >= 4
    assert np.isfinite([r["train/loss"] for r in rows if "train/loss" in r]).all()
    assert policy.model.obs_space == policy.obs_space
    assert (tmp_path / "run" / "ckpt" / "final.pt").is_file()


def test_both_examples_run_in_async_mode(tmp_path):
    cfg = tiny_cfg("cartpole-dqn", tmp_path / "dqn")
    cfg.max_env_step = 192
    dqn_main(cfg, async_mode=True)
    assert read_metrics(cfg.run_dir)[-1]["env_step"] >= 192
    cfg = tiny_cfg("cartpole-ppo", tmp_path / "ppo")
    cfg.max_env_step = 128
    ppo_main(cfg, async_mode=True)
    assert read_metrics(cfg.run_dir)[-1]["env_step"] >= 128
    assert (tmp_path / "dqn" / "ckpt" / "final.pt").is_file()
    assert (tmp_path / "ppo" / "ckpt" / "final.pt").is_file()


def test_ppo_example_in_async_mode_repeats_exactly_when_seeded_as_dingengine_seeds(tmp_path):
    # In the on-policy chain nothing that trains overlaps with what it trains on (the trainer
    # reads the rollout gae_estimator wrote, and waits for the evaluator, which reads
    # train_iter), so async mode repeats exactly. DQN's learner samples the buffer while
    # data_pusher fills it: docs/dingengine.md says why that chain does not repeat in async mode.
    runs = []
    for k in range(2):
        cfg = tiny_cfg("cartpole-ppo", tmp_path / f"run{k}")
        cfg.max_env_step = 128
        policy = ppo_main(cfg, async_mode=True)
        runs.append((_rows(cfg.run_dir), policy.model.state_dict()))
    (rows_a, weights_a), (rows_b, weights_b) = runs
    assert rows_a[-1]["env_step"] == 128 and rows_a[-1]["train_iter"] > 0
    assert rows_a == rows_b
    assert all(torch.equal(weights_a[k], weights_b[k]) for k in weights_a)
