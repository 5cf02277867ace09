"""Ports of DI-engine's `dqn_envpool*.py` scripts (DQN on Pong in EnvPool) in their structure.
Only the imports and the construction of the config, envs, model and buffer are rlpipe's:
`PoolEnvManagerV2(cfg.env.collector_env_cfg)` becomes `EnvManager(cfg.env.id, n_envs=...,
seed=cfg.seed, mode="envpool", env_kwargs=cfg.env.env_kwargs)` (the "train" preset of the
`pong-dqn` entry: DI-engine's episodic_life, and rewards clipped to their sign) and the
evaluator's `EnvManager(..., env_kwargs=cfg.env.eval_env_kwargs)` (whole games, real scores);
`collector_env.seed(cfg.seed)` has no counterpart, the managers are seeded when made.

Pong is not learnt in a test's budget (DI-engine's scripts run 10M env steps), so these tests
check that the example runs, sync and async, on EnvPool's frames and trains on them; the same
DQN chain learning CartPole is `dqn.py`'s port (test_example_ports.py, docs/dingengine.md)."""
import logging

import numpy as np
import pytest

from rlpipe import ding_init, set_pkg_seed, task
from rlpipe.contexts import OnlineRLContext
from rlpipe.data import ReplayBuffer
from rlpipe.envs import EnvManager
from rlpipe.middleware import (ContextExchanger, ModelExchanger, OffPolicyLearner, StepCollector,
                               StepCollectorAsync, data_pusher, envpool_evaluator, epoch_timer,
                               eps_greedy_handler, interaction_evaluator, nstep_reward_enhancer,
                               online_logger, read_metrics, termination_checker,
                               wandb_online_logger)
from rlpipe.models import QNetwork
from rlpipe.policies import DQNPolicy
from rlpipe.zoo import get_entry

pytest.importorskip("envpool")

MODES = pytest.mark.parametrize("async_mode", [False, True], ids=["sync", "async"])


def pong_cfg(run_dir, max_env_step=64):
    """The pong-dqn entry's config on a tiny budget (rlpipe's `pong_dqn_envpool_config`)."""
    cfg = get_entry("pong-dqn").resolve()
    cfg.run_dir = str(run_dir)
    cfg.env.n_envs, cfg.env.eval_n_envs = 4, 1
    cfg.policy.collect.random_collect_size = 0
    cfg.policy.learn.batch_size = 8
    cfg.replay.capacity, cfg.replay.min_samples = 1000, 16
    cfg.policy.eval.evaluator.n_episode = 1
    cfg.policy.eval.evaluator.eval_freq = 10_000  # the first evaluation only: a game is long
    cfg.env.stop_value = 21  # the most Pong gives: the budget ends the run
    cfg.max_env_step = max_env_step
    return cfg


def dqn_envpool_main(cfg, async_mode=False):
    """DI-engine's dqn_envpool.py `main(cfg)`, in its order; `termination_checker` takes the
    test's budget instead of 10M env steps. Returns the policy and the buffer."""
    logging.getLogger().setLevel(logging.INFO)
    ding_init(cfg)
    with task.start(async_mode=async_mode, ctx=OnlineRLContext()):
        collector_env = EnvManager(cfg.env.id, n_envs=cfg.env.n_envs, seed=cfg.seed,
                                   mode="envpool", env_kwargs=cfg.env.env_kwargs)
        evaluator_env = EnvManager(cfg.env.id, n_envs=cfg.env.eval_n_envs, seed=cfg.seed,
                                   mode="envpool", env_kwargs=cfg.env.eval_env_kwargs)
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
        if "nstep" in cfg.policy.learn and cfg.policy.learn.nstep > 1:
            task.use(nstep_reward_enhancer(cfg))
        task.use(data_pusher(cfg, buffer_))
        task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
        task.use(online_logger(train_show_freq=10))
        #task.use(CkptSaver(policy, cfg.exp_name, train_freq=1000))
        task.use(termination_checker(max_env_step=cfg.max_env_step))

        task.run()
    collector_env.close()
    evaluator_env.close()
    return policy, buffer_


def dqn_envpool_nstep_main(cfg, async_mode=False):
    """The chain of DI-engine's later dqn_envpool_*nstep*.py scripts, with what rlpipe names
    differently: `epoch_timer()` first, `envpool_evaluator` for the evaluator, and (refused,
    see below) `StepCollector` / `OffPolicyLearner` for `EnvpoolStepCollectorV2` /
    `OffPolicyLearnerV2`, `DQNPolicy` for `DQNFastPolicy`."""
    logging.getLogger().setLevel(logging.INFO)
    ding_init(cfg)
    with task.start(async_mode=async_mode, ctx=OnlineRLContext()):
        collector_env = EnvManager(cfg.env.id, n_envs=cfg.env.n_envs, seed=cfg.seed,
                                   mode="envpool", env_kwargs=cfg.env.env_kwargs)
        evaluator_env = EnvManager(cfg.env.id, n_envs=cfg.env.eval_n_envs, seed=cfg.seed,
                                   mode="envpool", env_kwargs=cfg.env.eval_env_kwargs)
        set_pkg_seed(cfg.seed, use_cuda=False)

        model = QNetwork(collector_env.observation_space, collector_env.action_space.n,
                         **cfg.policy.model)
        buffer_ = ReplayBuffer(cfg.replay.capacity)
        policy = DQNPolicy(cfg.policy, model=model)

        task.use(epoch_timer())

        # Here is the part of single process pipeline.
        task.use(envpool_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(eps_greedy_handler(cfg))
        task.use(
            StepCollector(
                cfg,
                policy.collect_mode,
                collector_env,
                random_collect_size=cfg.policy.collect.random_collect_size,
            )
        )
        if "nstep" in cfg.policy.learn and cfg.policy.learn.nstep > 1:
            task.use(nstep_reward_enhancer(cfg))
        task.use(data_pusher(cfg, buffer_))
        task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
        task.use(online_logger(train_show_freq=10))
        task.use(termination_checker(max_env_step=cfg.max_env_step))

        task.run()
    collector_env.close()
    evaluator_env.close()
    return policy, buffer_


def dqn_nstep_envpool_main(cfg, async_mode=False):
    """DI-engine's dqn_nstep_envpool.py `main(cfg)`, in its order: `StepCollectorAsync` (rlpipe's
    `StepCollector`: its pool steps every env each step), 3-step returns, `online_logger` and
    `wandb_online_logger` over `policy._monitor_vars_learn()`; `termination_checker` takes the
    test's budget instead of 10M env steps. Returns the policy and the buffer."""
    logging.getLogger().setLevel(logging.INFO)
    ding_init(cfg)
    with task.start(async_mode=async_mode, ctx=OnlineRLContext()):
        collector_env = EnvManager(cfg.env.id, n_envs=cfg.env.n_envs, seed=cfg.seed,
                                   mode="envpool", env_kwargs=cfg.env.env_kwargs)
        evaluator_env = EnvManager(cfg.env.id, n_envs=cfg.env.eval_n_envs, seed=cfg.seed,
                                   mode="envpool", env_kwargs=cfg.env.eval_env_kwargs)
        set_pkg_seed(cfg.seed, use_cuda=False)

        model = QNetwork(collector_env.observation_space, collector_env.action_space.n,
                         **cfg.policy.model)
        buffer_ = ReplayBuffer(cfg.replay.capacity)
        policy = DQNPolicy(cfg.policy, model=model)

        # Consider the case with multiple processes
        if task.router.is_active:
            if task.router.node_id == 0:
                task.add_role(task.role.LEARNER)
            elif task.router.node_id == 1:
                task.add_role(task.role.EVALUATOR)
            else:
                task.add_role(task.role.COLLECTOR)

            # Sync their context and model between each worker.
            task.use(ContextExchanger(skip_n_iter=1))
            task.use(ModelExchanger(model))
        task.use(epoch_timer())
        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(eps_greedy_handler(cfg))
        task.use(
            StepCollectorAsync(
                cfg,
                policy.collect_mode,
                collector_env,
                random_collect_size=cfg.policy.random_collect_size if hasattr(cfg.policy, 'random_collect_size') else 0,
            )
        )
        task.use(nstep_reward_enhancer(cfg))
        task.use(data_pusher(cfg, buffer_))
        task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
        task.use(online_logger(train_show_freq=10))
        task.use(
            wandb_online_logger(
                metric_list=policy._monitor_vars_learn(),
                model=policy._model,
                exp_config=cfg,
                anonymous=True,
                project_name=cfg.exp_name,
                wandb_sweep=False,
            )
        )
        task.use(termination_checker(max_env_step=cfg.max_env_step))
        task.run()
    collector_env.close()
    evaluator_env.close()
    return policy, buffer_


@MODES
def test_dqn_envpool_example_trains_on_envpool_frames(tmp_path, async_mode):
    cfg = pong_cfg(tmp_path / "run")
    policy, buffer_ = dqn_envpool_main(cfg, async_mode)
    batch = buffer_.sample(8)
    assert batch["obs"].shape == (8, 4, 84, 84) and batch["obs"].dtype == np.uint8  # EnvPool's
    assert len(buffer_) == 64 and policy.train_iter > 0  # every env step a transition
    # the evaluator played whole games of Pong: the barely trained policy loses one by many
    # points (an episode that a lost point ended would score -1)
    evals = [r["eval/return_mean"] for r in read_metrics(cfg.run_dir) if "eval/return_mean" in r]
    assert evals and all(-21 <= v <= -10 for v in evals)


@MODES
def test_dqn_envpool_nstep_chain_times_each_iteration(tmp_path, async_mode, caplog):
    cfg = pong_cfg(tmp_path / "run")
    cfg.policy.learn.nstep = 3
    with caplog.at_level(logging.INFO, logger="rlpipe.middleware.progress"):
        policy, buffer_ = dqn_envpool_nstep_main(cfg, async_mode)
    assert "discount" in buffer_.sample(4) and policy.train_iter > 0
    timed = [r.args[0] for r in caplog.records if r.getMessage().startswith("epoch_timer")]
    # one line per iteration: 64 env steps of 8 per iteration
    assert timed == list(range(64 // cfg.policy.collect.n_sample))


@pytest.mark.parametrize("name", ["EnvpoolStepCollector", "EnvpoolStepCollectorV2"])
def test_dingengine_envpool_collectors_are_refused_naming_step_collector(name):
    import rlpipe.middleware as mw

    with pytest.raises(ValueError, match=f"^{name}: .*use StepCollector\\(cfg, "
                                         f"policy.collect_mode, env\\)$"):
        getattr(mw, name)(None, None, None, random_collect_size=0)


@pytest.mark.parametrize("name", ["OffPolicyLearnerV2", "OffPolicyLearnerV3",
                                  "EnvpoolOffPolicyLearner"])
def test_dingengine_envpool_learners_are_refused_naming_off_policy_learner(name):
    import rlpipe.middleware as mw

    with pytest.raises(ValueError, match=f"^{name}: .*use OffPolicyLearner\\(cfg, "
                                         f"policy.learn_mode, buffer_\\)$"):
        getattr(mw, name)(None, None, None)


def test_epoch_timer_arguments_are_checked():
    with pytest.raises(ValueError, match="print_per=0"):
        epoch_timer(print_per=0)


@MODES
def test_dqn_nstep_envpool_runs_as_written_and_sends_its_rows_to_wandb(tmp_path, monkeypatch,
                                                                      async_mode):
    wandb = pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    cfg = pong_cfg(tmp_path / "run")
    cfg.policy.learn.nstep = 3
    cfg.exp_name = "Pong-v5-DQN-envpool-standard"  # the script sets it (with a timestamp)
    policy, buffer_ = dqn_nstep_envpool_main(cfg, async_mode)
    wandb.teardown()  # wait for W&B's service to write its files
    assert "discount" in buffer_.sample(4) and policy.train_iter > 0
    assert policy._monitor_vars_learn() == policy.monitor_vars()
    runs = list((tmp_path / "run" / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(runs) == 1 and b"train/loss" in runs[0].read_bytes()
    assert any("train/loss" in row for row in read_metrics(cfg.run_dir))  # online_logger's
