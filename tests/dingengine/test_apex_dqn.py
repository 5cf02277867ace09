"""Port of DI-engine's `apex_dqn.py` (and `apex_dqn_priority_parallel.py`, the same script):
APE-X DQN as a learner, an evaluator process and collectors. Each collector computes the
priorities of what it collected (`priority_calculator`), they travel with the trajectories
through `ContextExchanger`, and the learner's `PrioritizedReplayBuffer` takes them. Only the
imports and the construction of the config, envs, model and buffer are rlpipe's;
`parallel.launch(main, collectors=1, evaluator=True, backend="local")` replaces
`Parallel.runner(n_parallel_workers=3, ...)(main)`. `apex_dqn_priority_parallel_wandb.py` is
the same script with `wandb_online_logger` before `online_logger` (`cfg.wandb` here)."""
import glob
import logging
import pathlib

import numpy as np
import pytest
from easydict import EasyDict

from rlpipe import ding_init, set_pkg_seed, task
from rlpipe.config import to_plain
from rlpipe.contexts import OnlineRLContext
from rlpipe.data import PrioritizedReplayBuffer
from rlpipe.engine import parallel
from rlpipe.envs import EnvManager
from rlpipe.middleware import (CkptSaver, ContextExchanger, ModelExchanger, OffPolicyLearner,
                               StepCollector, data_pusher, eps_greedy_handler,
                               interaction_evaluator, load_checkpoint, nstep_reward_enhancer,
                               online_logger, priority_calculator, read_metrics,
                               termination_checker, wandb_online_logger)
from rlpipe.models import QNetwork
from rlpipe.policies import DQNPolicy
from rlpipe.zoo import get_entry

from .test_example_ports import tiny_cfg


def apex_dqn_main(plain_cfg):
    """DI-engine's apex_dqn.py, in its order; `cfg.max_env_step` (when set) adds a
    termination_checker for the budget, which the example does not have (it runs until the
    evaluator process reaches cfg.env.stop_value). Returns the learner's buffer and policy."""
    cfg = EasyDict(plain_cfg)
    logging.getLogger().setLevel(logging.INFO)
    ding_init(cfg)
    with task.start(async_mode=cfg.get("async_mode", False), ctx=OnlineRLContext()):

        assert task.router.is_active
        if task.router.node_id == 0:
            task.add_role(task.role.LEARNER)
        elif task.router.node_id == 1:
            task.add_role(task.role.EVALUATOR)
        else:
            task.add_role(task.role.COLLECTOR)

        set_pkg_seed(cfg.seed, use_cuda=False)

        if task.has_role(task.role.COLLECTOR):
            collector_env = EnvManager(cfg.env.id, n_envs=cfg.env.n_envs, seed=cfg.seed)
            evaluator_env = EnvManager(cfg.env.id, n_envs=cfg.env.eval_n_envs, seed=cfg.seed)
        elif task.has_role(task.role.EVALUATOR):
            collector_env = EnvManager(cfg.env.id, n_envs=cfg.env.n_envs, seed=cfg.seed)
            evaluator_env = EnvManager(cfg.env.id, n_envs=cfg.env.eval_n_envs, seed=cfg.seed)
        elif task.has_role(task.role.LEARNER):
            collector_env = EnvManager(cfg.env.id, n_envs=cfg.env.n_envs, seed=cfg.seed)
            evaluator_env = EnvManager(cfg.env.id, n_envs=cfg.env.eval_n_envs, seed=cfg.seed)

        if task.has_role(task.role.LEARNER):
            model = QNetwork(collector_env.observation_space, collector_env.action_space.n,
                             **cfg.policy.model)
            buffer_ = PrioritizedReplayBuffer(cfg.replay.capacity, alpha=cfg.replay.alpha,
                                              beta=cfg.replay.beta)
            policy = DQNPolicy(cfg.policy, model=model)
            task.use(ContextExchanger(skip_n_iter=1))
            task.use(ModelExchanger(model))

        elif task.has_role(task.role.COLLECTOR):
            model = QNetwork(collector_env.observation_space, collector_env.action_space.n,
                             **cfg.policy.model)
            buffer_ = PrioritizedReplayBuffer(cfg.replay.capacity, alpha=cfg.replay.alpha,
                                              beta=cfg.replay.beta)
            policy = DQNPolicy(cfg.policy, model=model)
            task.use(ContextExchanger(skip_n_iter=1))
            task.use(ModelExchanger(model))

        elif task.has_role(task.role.EVALUATOR):
            model = QNetwork(collector_env.observation_space, collector_env.action_space.n,
                             **cfg.policy.model)
            buffer_ = PrioritizedReplayBuffer(cfg.replay.capacity, alpha=cfg.replay.alpha,
                                              beta=cfg.replay.beta)
            policy = DQNPolicy(cfg.policy, model=model)
            task.use(ContextExchanger(skip_n_iter=1))
            task.use(ModelExchanger(model))

        # Here is the part of single process pipeline.
        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(eps_greedy_handler(cfg))
        task.use(StepCollector(cfg, policy.collect_mode, collector_env))
        print(f"cfg.policy.learn.nstep:{cfg.policy.learn.nstep}")
        if "nstep" in cfg.policy.learn and cfg.policy.learn.nstep > 1:
            if task.has_role(task.role.COLLECTOR):
                task.use(nstep_reward_enhancer(cfg))

        def dqn_priority_calculation(update_target_model_frequency):
            last_update_train_iter = 0

            def _calculate_priority(data):
                nonlocal last_update_train_iter

                if (task.ctx.train_iter - last_update_train_iter) % update_target_model_frequency == 0:
                    update_target_model = True
                else:
                    update_target_model = False
                priority = policy.calculate_priority(data, update_target_model=update_target_model)['priority']
                last_update_train_iter = task.ctx.train_iter
                return priority

            return _calculate_priority

        task.use(
            priority_calculator(
                priority_calculation_fn=dqn_priority_calculation(
                    update_target_model_frequency=cfg.policy.learn.target_update_freq
                ),
            )
        )

        task.use(data_pusher(cfg, buffer_))
        task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
        if cfg.get("wandb"):
            task.use(
                wandb_online_logger(
                    metric_list=policy.monitor_vars(),
                    model=policy._model,
                    anonymous=True,
                    project_name=cfg.exp_name,
                    wandb_sweep=False,
                )
            )
        task.use(online_logger(train_show_freq=10))
        task.use(CkptSaver(policy, cfg.run_dir, train_freq=100))
        if cfg.get("max_env_step"):
            task.use(termination_checker(max_env_step=cfg.max_env_step))
        task.run()
    collector_env.close()
    evaluator_env.close()
    return buffer_, policy


def _launch(cfg):
    return parallel.launch(apex_dqn_main, collectors=1, evaluator=True, backend="local",
                           args=(to_plain(cfg),))


@pytest.mark.parametrize("async_mode", [False, True], ids=["sync", "async"])
def test_apex_dqn_learner_trains_on_priorities_the_collector_computed(tmp_path, async_mode):
    cfg = tiny_cfg("cartpole-dqn", tmp_path / "run")
    cfg.policy.learn.nstep = 3  # the collectors' nstep branch: priorities of n-step rows
    cfg.max_env_step = 256
    cfg.env.stop_value = 10_000  # the budget ends the run, not the evaluator
    cfg.async_mode = async_mode
    buffer_, policy = _launch(cfg)
    assert len(buffer_) > 0 and policy.train_iter > 0
    batch = buffer_.sample(64)
    # n-step rows from the collector, with their priority in the sum tree rather than a column
    assert "discount" in batch and "weight" in batch and "priority" not in batch
    assert len(np.unique(buffer_.priorities())) > 1
    rows = read_metrics(cfg.run_dir)
    assert rows[-1]["env_step"] >= 256


def test_apex_dqn_runs_on_its_own_lunarlander_config(tmp_path):
    # ding.config.DQN.gym_lunarlander_v2 is the zoo's lunarlander-dqn entry (3-step returns)
    cfg = get_entry("lunarlander-dqn").resolve()
    cfg.run_dir = str(tmp_path / "run")
    cfg.env.n_envs, cfg.env.eval_n_envs = 2, 1
    cfg.policy.collect.random_collect_size = 0
    cfg.policy.collect.n_sample = 32
    cfg.policy.learn.update_per_collect, cfg.policy.learn.batch_size = 2, 16
    cfg.replay.min_samples = 32
    cfg.policy.eval.evaluator.n_episode = 1
    cfg.max_env_step = 128
    assert cfg.env.id.startswith("LunarLander") and cfg.policy.learn.nstep == 3
    buffer_, policy = _launch(cfg)
    assert "discount" in buffer_.sample(4) and policy.train_iter > 0
    assert len(np.unique(buffer_.priorities())) > 1


@pytest.mark.slow
def test_apex_dqn_runs_until_its_evaluator_process_reaches_stop_value(tmp_path):
    # As the example: no budget; the evaluator process evaluates the learner's weights and
    # ends the run at stop_value. The untrained greedy policy scores about 10 on CartPole.
    cfg = tiny_cfg("cartpole-dqn", tmp_path / "run")
    cfg.policy.learn.update_per_collect = 16
    cfg.env.stop_value = 100
    _, policy = _launch(cfg)
    best = load_checkpoint(cfg.run_dir, which="best")["meta"]
    assert best["eval_value"] >= 100 and policy.train_iter > 0


def test_the_wandb_variant_sends_the_learners_rows_to_wandb_beside_online_logger(
        tmp_path, monkeypatch):
    wandb = pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")  # the child processes inherit it
    cfg = tiny_cfg("cartpole-dqn", tmp_path / "run")
    cfg.max_env_step, cfg.env.stop_value, cfg.wandb = 256, 10_000, True
    cfg.exp_name = "CartPole-v1-Apex-DQN"  # the script's own line sets its exp_name
    _, policy = _launch(cfg)
    wandb.teardown()  # wait for W&B's service to write its files
    runs = glob.glob(str(tmp_path / "run" / "wandb" / "offline-run-*" / "run-*.wandb"))
    assert len(runs) == 1  # the learner's only: the collector and the evaluator send nothing
    data = pathlib.Path(runs[0]).read_bytes()
    # the statistics the policy lists (policy.monitor_vars()) and the evaluations
    assert policy.monitor_vars() == ["loss", "q_mean", "target_mean", "td_abs_mean", "grad_norm"]
    assert b"train/loss" in data and b"train/q_mean" in data and b"eval/return_mean" in data
    # online_logger stays the one writer of metrics.jsonl: each iteration's row once
    rows = read_metrics(cfg.run_dir)
    keys = [(r.get("env_step"), r["train_iter"], r["total_step"]) for r in rows]
    assert rows and len(keys) == len(set(keys))
