"""Ports of DI-engine's `apex_dqn_parallel.py` (one pipeline per role: the learner pushes and
trains, collectors collect, the evaluator evaluates and saves) and `apex_dqn_parallel_origin.py`
(dqn.py's pipeline with its `ContextExchanger` / `ModelExchanger` block), as a learner, an
evaluator process and a collector on `parallel.launch(..., backend="local")`.

Besides the imports and the construction of the config, envs, model and buffer,
`apex_dqn_parallel.py` loses two things that rlpipe does not have: the unused
`FileModelLoader` (weights travel through the run's hub) and the learner's
`PeriodicalModelExchanger(mode="send")` (its `ModelExchanger(model)` already sends the weights
after every iteration)."""
import logging

import gymnasium as gym
import pytest
import torch
from easydict import EasyDict

from rlpipe import ding_init, set_pkg_seed, task
from rlpipe.config import to_plain
from rlpipe.contexts import OnlineRLContext
from rlpipe.data import PrioritizedReplayBuffer, ReplayBuffer
from rlpipe.engine import parallel
from rlpipe.envs import EnvManager
from rlpipe.middleware import (CkptSaver, ContextExchanger, ModelExchanger, OffPolicyLearner,
                               PeriodicalModelExchanger, StepCollector, data_pusher,
                               eps_greedy_handler, interaction_evaluator, load_checkpoint,
                               online_logger, read_metrics, termination_checker)
from rlpipe.models import QNetwork
from rlpipe.policies import DQNPolicy

from .test_example_ports import tiny_cfg


def apex_dqn_parallel_main(plain_cfg, env):
    """DI-engine's apex_dqn_parallel.py `main(cfg, env)`, in its order; `env` is the env id.
    `cfg.max_env_step` (when set) adds a termination_checker to the learner for the budget
    (the example runs until the evaluator reaches cfg.env.stop_value)."""
    cfg = EasyDict(plain_cfg)
    logging.getLogger().setLevel(logging.INFO)

    with task.start(async_mode=False, ctx=OnlineRLContext()):

        assert task.router.is_active
        if task.router.node_id == 0:
            task.add_role(task.role.LEARNER)
        elif task.router.node_id == 1:
            task.add_role(task.role.EVALUATOR)
        else:
            task.add_role(task.role.COLLECTOR)

        set_pkg_seed(cfg.seed, use_cuda=False)

        if task.has_role(task.role.COLLECTOR):
            collector_env = EnvManager(env, n_envs=cfg.env.n_envs, seed=cfg.seed)
            evaluator_env = EnvManager(env, n_envs=cfg.env.eval_n_envs, seed=cfg.seed)
        elif task.has_role(task.role.EVALUATOR):
            collector_env = EnvManager(env, n_envs=cfg.env.n_envs, seed=cfg.seed)
            evaluator_env = EnvManager(env, n_envs=cfg.env.eval_n_envs, seed=cfg.seed)

        spaces = gym.make(env)  # the learner makes no envs: the model's spaces
        if task.has_role(task.role.LEARNER):
            model = QNetwork(spaces.observation_space, spaces.action_space.n, **cfg.policy.model)
            buffer_ = PrioritizedReplayBuffer(cfg.replay.capacity, alpha=cfg.replay.alpha,
                                              beta=cfg.replay.beta)
            policy = DQNPolicy(cfg.policy, model=model)
            task.use(ContextExchanger(skip_n_iter=1))
            task.use(ModelExchanger(model))

            # Here is the part of single process pipeline.
            task.use(data_pusher(cfg, buffer_))
            task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
            task.use(online_logger(train_show_freq=10))
            task.use(CkptSaver(policy, cfg.run_dir, train_freq=100))
            if cfg.get("max_env_step"):
                task.use(termination_checker(max_env_step=cfg.max_env_step))

        elif task.has_role(task.role.COLLECTOR):
            model = QNetwork(spaces.observation_space, spaces.action_space.n, **cfg.policy.model)
            buffer_ = PrioritizedReplayBuffer(cfg.replay.capacity, alpha=cfg.replay.alpha,
                                              beta=cfg.replay.beta)
            policy = DQNPolicy(cfg.policy, model=model)
            task.use(ContextExchanger(skip_n_iter=1))
            task.use(ModelExchanger(model))

            # Here is the part of single process pipeline.
            task.use(eps_greedy_handler(cfg))
            task.use(StepCollector(cfg, policy.collect_mode, collector_env))
            task.use(data_pusher(cfg, buffer_))

        elif task.has_role(task.role.EVALUATOR):
            model = QNetwork(spaces.observation_space, spaces.action_space.n, **cfg.policy.model)
            buffer_ = PrioritizedReplayBuffer(cfg.replay.capacity, alpha=cfg.replay.alpha,
                                              beta=cfg.replay.beta)
            policy = DQNPolicy(cfg.policy, model=model)
            task.use(ContextExchanger(skip_n_iter=1))
            task.use(ModelExchanger(model))

            # Here is the part of single process pipeline.
            task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
            task.use(CkptSaver(policy, cfg.run_dir, train_freq=100))

        task.run()
    return policy


def apex_dqn_parallel_origin_main(plain_cfg):
    """DI-engine's apex_dqn_parallel_origin.py `main()`, in its order, with a
    termination_checker for the budget (the example runs until cfg.env.stop_value)."""
    cfg = EasyDict(plain_cfg)
    logging.getLogger().setLevel(logging.INFO)
    ding_init(cfg)
    with task.start(async_mode=False, ctx=OnlineRLContext()):
        collector_env = EnvManager(cfg.env.id, n_envs=cfg.env.n_envs, seed=cfg.seed)
        evaluator_env = EnvManager(cfg.env.id, n_envs=cfg.env.eval_n_envs, seed=cfg.seed)

        set_pkg_seed(cfg.seed, use_cuda=False)

        model = QNetwork(collector_env.observation_space, collector_env.action_space.n,
                         **cfg.policy.model)
        buffer_ = ReplayBuffer(cfg.replay.capacity)
        policy = DQNPolicy(cfg.policy, model=model)

        # Consider the case with multiple processes
        if task.router.is_active:
            # You can use labels to distinguish between workers with different roles,
            # here we use node_id to distinguish.
            if task.router.node_id == 0:
                task.add_role(task.role.LEARNER)
            elif task.router.node_id == 1:
                task.add_role(task.role.EVALUATOR)
            else:
                task.add_role(task.role.COLLECTOR)

            # Sync their context and model between each worker.
            task.use(ContextExchanger(skip_n_iter=1))
            task.use(ModelExchanger(model))

        # Here is the part of single process pipeline.
        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(eps_greedy_handler(cfg))
        task.use(StepCollector(cfg, policy.collect_mode, collector_env))
        task.use(data_pusher(cfg, buffer_))
        task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
        task.use(online_logger(train_show_freq=10))
        task.use(CkptSaver(policy, cfg.run_dir, train_freq=100))
        task.use(termination_checker(max_env_step=cfg.max_env_step))

        task.run()
    collector_env.close()
    evaluator_env.close()
    return policy


def test_apex_dqn_parallel_runs_one_pipeline_per_role(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no ding_init: online_logger() writes under ./runs/
    cfg = tiny_cfg("cartpole-dqn", tmp_path / "run")
    cfg.max_env_step = 256
    cfg.env.stop_value = 10_000  # the budget ends the run, not the evaluator
    policy = parallel.launch(apex_dqn_parallel_main, collectors=1, evaluator=True,
                             backend="local", args=(to_plain(cfg), cfg.env.id))
    final = load_checkpoint(cfg.run_dir, which="final")["meta"]
    # the collector's steps reached the learner's buffer and it trained on them
    assert final["env_step"] >= 256 and final["train_iter"] == policy.train_iter > 0
    # the evaluator process evaluated the learner's weights and its CkptSaver kept the best
    assert load_checkpoint(cfg.run_dir, which="best")["meta"]["eval_value"] > 0


@pytest.mark.slow
def test_apex_dqn_parallel_learns_until_its_evaluator_reaches_stop_value(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # the untrained greedy policy scores about 10 on CartPole; the run ends at 100
    cfg = tiny_cfg("cartpole-dqn", tmp_path / "run")
    cfg.policy.learn.update_per_collect = 16
    cfg.env.stop_value = 100
    parallel.launch(apex_dqn_parallel_main, collectors=1, evaluator=True, backend="local",
                    args=(to_plain(cfg), cfg.env.id))
    assert load_checkpoint(cfg.run_dir, which="best")["meta"]["eval_value"] >= 100


def test_apex_dqn_parallel_origin_runs_its_distributed_block(tmp_path):
    cfg = tiny_cfg("cartpole-dqn", tmp_path / "run")
    cfg.max_env_step = 256
    cfg.env.stop_value = 10_000
    policy = parallel.launch(apex_dqn_parallel_origin_main, collectors=1, evaluator=True,
                             backend="local", args=(to_plain(cfg),))
    rows = read_metrics(cfg.run_dir)
    assert rows[-1]["env_step"] >= 256 and policy.train_iter > 0
    assert any("collect/episode_return_mean" in r for r in rows)  # the collector's episodes
    assert load_checkpoint(cfg.run_dir, which="final")["meta"]["train_iter"] == policy.train_iter


def test_what_apex_dqn_parallel_builds_that_rlpipe_refuses_is_one_line_each(dqn):
    model = torch.nn.Linear(4, 2)
    with pytest.raises(ValueError, match="keep task.use\\(ModelExchanger\\(model\\)\\)"):
        PeriodicalModelExchanger(model=model, mode="send")
    learner = DQNPolicy(dqn.cfg.policy, model=QNetwork(dqn.collector_env.observation_space, 2),
                        enable_field=["learn"])  # accepted: the learner's policy learns only
    assert learner.learn_mode is not None
    with pytest.raises(AttributeError, match="enable_field"):
        learner.collect_mode
