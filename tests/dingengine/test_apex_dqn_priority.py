"""Port of DI-engine's `apex_dqn_priority.py`, in its structure: the collector gives each
transition its priority (`priority_calculator` over `DQNPolicy.calculate_priority`) and the
prioritized buffer takes it. Only the imports and the construction of the config, envs, model
and buffer are rlpipe's (`PrioritizedReplayBuffer` for `DequeBuffer` +
`PriorityExperienceReplay`; no `cfg.policy.priority` flags). Tiny budgets, sync and async."""
import logging

import numpy as np
import pytest

from rlpipe import set_pkg_seed, task
from rlpipe.contexts import OnlineRLContext
from rlpipe.data import PrioritizedReplayBuffer, ReplayBuffer
from rlpipe.envs import EnvManager
from rlpipe.middleware import (CkptSaver, OffPolicyLearner, StepCollector, data_pusher,
                               eps_greedy_handler, interaction_evaluator, nstep_reward_enhancer,
                               load_checkpoint, priority_calculator, termination_checker)
from rlpipe.models import QNetwork
from rlpipe.policies import DQNPolicy
from rlpipe.zoo import get_entry

from .test_example_ports import tiny_cfg

MODES = pytest.mark.parametrize("async_mode", [False, True], ids=["sync", "async"])


def apex_dqn_priority_main(cfg, async_mode=False):
    """DI-engine's apex_dqn_priority.py, in its order, with a termination_checker for the
    budget (the example runs until cfg.env.stop_value). Returns the buffer and the policy."""
    logging.getLogger().setLevel(logging.INFO)
    with task.start(async_mode=async_mode, ctx=OnlineRLContext()):
        collector_env = EnvManager(cfg.env.id, n_envs=cfg.env.n_envs, seed=cfg.seed)
        evaluator_env = EnvManager(cfg.env.id, n_envs=cfg.env.eval_n_envs, seed=cfg.seed)

        set_pkg_seed(cfg.seed, use_cuda=False)

        model = QNetwork(collector_env.observation_space, collector_env.action_space.n,
                         **cfg.policy.model)
        buffer_ = PrioritizedReplayBuffer(cfg.replay.capacity, alpha=cfg.replay.alpha,
                                          beta=cfg.replay.beta)
        policy = DQNPolicy(cfg.policy, model=model)

        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(eps_greedy_handler(cfg))
        task.use(StepCollector(cfg, policy.collect_mode, collector_env))
        if "nstep" in cfg.policy.learn and cfg.policy.learn.nstep > 1:
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
        task.use(CkptSaver(policy, cfg.run_dir, train_freq=100))
        task.use(termination_checker(max_env_step=cfg.max_env_step))
        task.run()
    collector_env.close()
    evaluator_env.close()
    return buffer_, policy


@MODES
def test_apex_dqn_priority_example_trains_on_priorities_from_the_collector(tmp_path, async_mode):
    cfg = tiny_cfg("cartpole-dqn", tmp_path / "run")
    cfg.policy.learn.nstep = 3  # the example's nstep branch: priorities of n-step rows
    cfg.max_env_step = 192
    buffer_, policy = apex_dqn_priority_main(cfg, async_mode)
    assert len(buffer_) == len(buffer_.priorities()) > 0 and policy.train_iter > 0
    batch = buffer_.sample(64)
    assert "priority" not in batch  # the priorities went into the sum tree, not into the rows
    assert "weight" in batch and "discount" in batch
    assert len(np.unique(buffer_.priorities())) > 1
    assert (tmp_path / "run" / "ckpt" / "final.pt").is_file()


def _collect_once(cfg, policy, buffer_, calculate):
    env = EnvManager("CartPole-v1", n_envs=2, seed=0)  # a chain that fails closes its envs
    try:
        with task.start(ctx=OnlineRLContext()):
            task.use(eps_greedy_handler(cfg))
            task.use(StepCollector(cfg, policy.collect_mode, env))
            task.use(priority_calculator(priority_calculation_fn=calculate))
            task.use(data_pusher(cfg, buffer_))
            task.run(max_step=1)
    finally:
        env.close()


def test_a_new_row_enters_the_buffer_with_the_priority_computed_where_it_was_collected(dqn):
    cfg, policy = dqn.cfg, dqn.policy
    seen = []

    def calculate(data):
        priority = policy.calculate_priority(data)["priority"]
        seen.extend(priority)
        return priority

    buffer_ = PrioritizedReplayBuffer(1000, alpha=0.6)
    _collect_once(cfg, policy, buffer_, calculate)
    expected = (np.concatenate(seen) + buffer_.eps) ** 0.6  # every step of CartPole is valid
    assert np.allclose(buffer_.priorities(), expected)
    assert len(np.unique(expected)) > 1  # not the one priority a push without them would give


def test_calculate_priority_is_the_td_error_of_the_learner(dqn):
    policy = dqn.policy
    rng = np.random.default_rng(0)
    batch = {"obs": rng.normal(size=(16, 4)).astype(np.float32),
             "next_obs": rng.normal(size=(16, 4)).astype(np.float32),
             "action": rng.integers(2, size=16), "reward": np.ones(16, np.float32),
             "terminated": rng.random(16) < 0.3}
    priority = policy.calculate_priority(batch)["priority"]
    weighted = {**batch, "weight": np.ones(16, np.float32)}
    assert np.allclose(policy.learn_mode.forward(weighted)["priority"], priority, atol=1e-5)
    # per step of ctx.trajectories: one array per step, split as the steps were
    steps = [{k: v[:6] for k, v in batch.items()}, {k: v[6:] for k, v in batch.items()}]
    per_step = policy.calculate_priority(steps)["priority"]
    assert [len(p) for p in per_step] == [6, 10]


def test_priorities_into_a_uniform_buffer_or_of_the_wrong_length_are_refused(dqn):
    cfg, policy = dqn.cfg, dqn.policy
    calculate = lambda data: policy.calculate_priority(data)["priority"]  # noqa: E731
    with pytest.raises(TypeError, match="the buffer is a ReplayBuffer.*PrioritizedReplayBuffer"):
        _collect_once(cfg, policy, ReplayBuffer(100), calculate)
    with pytest.raises(ValueError, match="returned 1 entries for 16 steps"):
        _collect_once(cfg, policy, PrioritizedReplayBuffer(100), lambda data: [np.ones(2)])
    with pytest.raises(ValueError, match="a step of 2 transitions got 3 priorities"):
        _collect_once(cfg, policy, PrioritizedReplayBuffer(100),
                      lambda data: [np.ones(3)] * len(data))
    with pytest.raises(TypeError, match="pass the priority function once"):
        priority_calculator()
    with pytest.raises(ValueError, match="priorities must be finite and >= 0"):
        PrioritizedReplayBuffer(10).push({"reward": np.ones(2)}, priority=[1.0, -1.0])


def test_dingengine_first_name_for_the_priority_function_is_accepted(dqn):
    cfg, policy = dqn.cfg, dqn.policy
    buffer_ = PrioritizedReplayBuffer(1000)
    with task.start(ctx=OnlineRLContext()):
        task.use(eps_greedy_handler(cfg))
        task.use(StepCollector(cfg, policy.collect_mode, dqn.collector_env))
        task.use(priority_calculator(
            func_for_priority_calculation=lambda data: [np.full(len(s["reward"]), 2.0)
                                                        for s in data]))
        task.use(data_pusher(cfg, buffer_))
        task.run(max_step=1)
    assert np.allclose(buffer_.priorities(), (2.0 + buffer_.eps) ** buffer_.alpha)


@pytest.mark.slow
def test_apex_dqn_priority_example_learns_cartpole(tmp_path):
    # The zoo's cartpole-dqn config on a budget of 3,000 env steps. The untrained greedy
    # policy keeps the pole up for about 10 steps (the first evaluation, before any update);
    # the bar of 100 is far above it.
    cfg = get_entry("cartpole-dqn").resolve()
    cfg.run_dir = str(tmp_path / "run")
    cfg.max_env_step = 3000
    cfg.policy.eval.evaluator.n_episode = 5
    apex_dqn_priority_main(cfg)
    best = load_checkpoint(cfg.run_dir, which="best")["meta"]
    assert best["eval_value"] > 100, best


def test_pushed_priorities_follow_their_rows_when_a_push_overflows_the_buffer():
    buffer_ = PrioritizedReplayBuffer(4, alpha=1.0, eps=1e-6)
    buffer_.push({"reward": np.arange(6, dtype=np.float32)}, priority=np.arange(6.0))
    # only the newest 4 rows are kept: rows 2..5, at positions 2, 3, 0, 1 of the ring
    assert set(buffer_.sample(64)["reward"].tolist()) <= {2.0, 3.0, 4.0, 5.0}
    assert np.allclose(buffer_.priorities(), np.array([4, 5, 2, 3]) + 1e-6)
    # a later row pushed without a priority gets the largest one seen
    buffer_.push({"reward": np.zeros(1, np.float32)})
    assert np.allclose(buffer_.priorities(), np.array([4, 5, 5, 3]) + 1e-6)
    with pytest.raises(ValueError, match="2 rows but 3 priorities"):
        buffer_.push({"reward": np.zeros(2, np.float32)}, priority=[1.0, 2.0, 3.0])
