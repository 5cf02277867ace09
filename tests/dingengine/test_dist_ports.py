"""DI-engine's distributed scripts on rlpipe's launcher (`backend="local"`: child processes,
no Ray). `dqn_dist.py` in its structure, one block per `task.router.node_id` with
`context_exchanger` / `model_exchanger`, and `ppo.py`'s `ContextExchanger` /
`ModelExchanger` block: only the imports and the construction of the config, envs, model and
buffer are rlpipe's; `parallel.launch(main, collectors=1, evaluator=True, backend="local")`
replaces `ditask --parallel-workers 3`."""
import logging
import threading

import gymnasium as gym
import pytest
import torch
from easydict import EasyDict

from rlpipe import set_pkg_seed, task
from rlpipe.config import to_plain
from rlpipe.contexts import OnlineRLContext
from rlpipe.data import ReplayBuffer
from rlpipe.engine import parallel
from rlpipe.envs import EnvManager
from rlpipe.middleware import (CkptSaver, ContextExchanger, ModelExchanger, OffPolicyLearner,
                               StepCollector, context_exchanger, data_pusher,
                               eps_greedy_handler, interaction_evaluator, load_checkpoint,
                               model_exchanger, read_metrics)
from rlpipe.middleware.collector import MODEL_LOADED
from rlpipe.models import QNetwork
from rlpipe.policies import DQNPolicy

from .test_example_ports import ppo_main, tiny_cfg


def dqn_dist_main(plain_cfg):
    """DI-engine's dqn_dist.py, in its order: node 0 learns, node 1 evaluates, the others
    collect. Returns the policy (the learner's is what `launch` returns)."""
    logging.getLogger().setLevel(logging.INFO)
    cfg = EasyDict(plain_cfg)
    with task.start(async_mode=False, ctx=OnlineRLContext()):
        assert task.router.is_active, "Launch this script with rlpipe.engine.parallel.launch"

        set_pkg_seed(cfg.seed, use_cuda=False)

        spaces = gym.make(cfg.env.id)
        model = QNetwork(spaces.observation_space, spaces.action_space.n, **cfg.policy.model)
        buffer_ = ReplayBuffer(cfg.replay.capacity)
        policy = DQNPolicy(cfg.policy, model=model)

        if task.router.node_id == 0:  # Learner
            logging.info("Learner running on node %d", task.router.node_id)
            buffer_ = ReplayBuffer(cfg.replay.capacity)
            task.use(
                context_exchanger(
                    send_keys=["train_iter"],
                    recv_keys=["trajectories", "episodes", "env_step", "env_episode"],
                    skip_n_iter=0
                )
            )
            task.use(model_exchanger(model, is_learner=True))
            task.use(data_pusher(cfg, buffer_))
            task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
            task.use(CkptSaver(cfg, policy, train_freq=100))

        elif task.router.node_id == 1:  # Evaluator
            logging.info("Evaluator running on node %d", task.router.node_id)
            evaluator_env = EnvManager(cfg.env.id, n_envs=cfg.env.eval_n_envs, seed=cfg.seed)
            task.use(context_exchanger(recv_keys=["train_iter", "env_step"], skip_n_iter=1))
            task.use(model_exchanger(model, is_learner=False))
            task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
            task.use(CkptSaver(cfg, policy, save_finish=False))

        else:  # Collectors
            logging.info("Collector running on node %d", task.router.node_id)
            collector_env = EnvManager(cfg.env.id, n_envs=cfg.env.n_envs, seed=cfg.seed)
            task.use(
                context_exchanger(
                    send_keys=["trajectories", "episodes", "env_step", "env_episode"],
                    recv_keys=["train_iter"],
                    skip_n_iter=1
                )
            )
            task.use(model_exchanger(model, is_learner=False))
            task.use(eps_greedy_handler(cfg))
            task.use(StepCollector(cfg, policy.collect_mode, collector_env))

        task.run()
    return policy


CAP_S = 300.0  # wall seconds; the run reaches stop_value in well under a minute


def dist_cfg(entry, run_dir):
    cfg = tiny_cfg(entry, run_dir)
    cfg.env.stop_value = 30  # the example runs until the evaluator process reaches it
    return cfg


@pytest.mark.slow
def test_dqn_dist_runs_as_a_learner_an_evaluator_and_a_collector(tmp_path):
    cfg = dist_cfg("cartpole-dqn", tmp_path / "run")
    # the script runs until its evaluator reaches stop_value (no budget, as in DI-engine's):
    # a run that never gets there is ended after CAP_S (once its run() started), and fails the bar below
    # instead of hanging the suite (the learner runs in this process: `launch`'s docstring)
    cap = threading.Timer(CAP_S, task.end_run, args=(f"the test's cap of {CAP_S:.0f} s",))
    cap.start()
    try:
        policy = parallel.launch(dqn_dist_main, collectors=1, evaluator=True, backend="local",
                                 args=(to_plain(cfg),))
    finally:
        cap.cancel()
    final = load_checkpoint(cfg.run_dir, which="final")["meta"]
    # the collector's env steps reached the learner, which trained on them ...
    assert final["env_step"] > 0 and final["train_iter"] == policy.train_iter > 0
    # ... until the evaluator process evaluated its weights at stop_value and ended the run
    assert final["eval_value"] >= 30
    # the evaluator acted with the learner's weights: its best.pt holds the learner's network
    best = load_checkpoint(cfg.run_dir, which="best")
    assert best["meta"]["eval_value"] >= 30


def _ppo_dist(plain_cfg):
    return ppo_main(EasyDict(plain_cfg))


def test_ppo_example_runs_its_distributed_block(tmp_path):
    cfg = tiny_cfg("cartpole-ppo", tmp_path / "run")
    cfg.max_env_step = 256
    policy = parallel.launch(_ppo_dist, collectors=1, evaluator=True, backend="local",
                             args=(to_plain(cfg),))
    rows = read_metrics(cfg.run_dir)
    # the collector's rollouts reached the learner: one of 32 env steps per learner iteration
    assert rows[-1]["env_step"] >= 256
    assert policy.train_iter >= 256 // 32
    assert any("collect/episode_return_mean" in r for r in rows)


def test_a_dingengine_role_that_the_launcher_did_not_give_is_refused(tmp_path):
    # without an evaluator process, node 1 is a collector: ppo.py would make it the evaluator
    cfg = tiny_cfg("cartpole-ppo", tmp_path / "run")
    cfg.max_env_step = 64
    with pytest.raises(parallel.ProcessFailedError, match="launch it with evaluator=True"):
        parallel.launch(_ppo_dist, collectors=1, backend="local", args=(to_plain(cfg),))


def test_exchanger_options_rlpipe_cannot_honour_are_refused():
    with pytest.raises(ValueError, match="rlpipe does not ship \\['priority'\\]"):
        context_exchanger(send_keys=["trajectories", "priority"])
    with pytest.raises(ValueError, match="leave model_loader out"):
        ModelExchanger(None, model_loader=object())


def test_a_collector_acts_with_the_weights_a_model_exchanger_loaded_before_it(ppo):
    # In a launched collector, ModelExchanger loads the learner's weights into the network
    # before StepCollector acts: the event makes the collector copy them into its acting copy
    # first, so that a rollout comes from the weights just received.
    policy, same = ppo.policy, []

    def load_weights(ctx):
        if ctx.total_step == 1:
            with torch.no_grad():
                for p in policy.model.parameters():
                    p.add_(1.0)
            task.emit(MODEL_LOADED)

    def compare(ctx):
        same.append(all(torch.equal(a, m) for a, m in zip(policy.acting.parameters(),
                                                           policy.model.parameters())))

    with task.start(ctx=OnlineRLContext()):
        task.use(load_weights)
        task.use(StepCollector(ppo.cfg, policy.collect_mode, ppo.collector_env))
        task.use(compare)
        task.run(max_step=2)
    assert same == [True, True]


def _context_exchanger_alone():
    with task.start(ctx=OnlineRLContext()):
        task.use(ContextExchanger())
        task.run(max_step=1)


def test_a_context_exchanger_without_its_model_exchanger_is_a_one_line_error():
    with pytest.raises(RuntimeError, match="add task.use\\(ModelExchanger\\(model\\)\\)"):
        parallel.launch(_context_exchanger_alone, collectors=1, backend="local")
