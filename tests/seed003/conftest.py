"""Small CartPole set-ups for the guide's scripts: the names the guide's lines use
(`cfg`, `policy`, `collector_env`, `evaluator_env`, `buffer_`), with tiny budgets.

`cfg.env.stop_value = 0` lets the guide's `task.run(max_step=100000)` end after its first
iteration: the evaluator's first evaluation reaches it and sets `task.finish`.
"""
import types

import pytest

from rlpipe.data import ReplayBuffer
from rlpipe.envs import EnvManager
from rlpipe.policies import DQNPolicy, PPOPolicy
from rlpipe.zoo import get_entry


def _setup(entry, policy_cls, run_dir):
    cfg = get_entry(entry).resolve()
    cfg.run_dir = str(run_dir)
    cfg.env.stop_value = 0
    cfg.policy.collect.n_sample = 32
    cfg.policy.collect.random_collect_size = 0
    cfg.policy.learn.batch_size = 16
    cfg.policy.learn.update_per_collect = 2
    cfg.policy.eval.evaluator.n_episode = 2
    if "epoch_per_collect" in cfg.policy.learn:
        cfg.policy.learn.epoch_per_collect = 1
    collector_env = EnvManager("CartPole-v1", n_envs=2, seed=0)
    evaluator_env = EnvManager("CartPole-v1", n_envs=2, seed=1)
    policy = policy_cls(cfg.policy, collector_env.observation_space, collector_env.action_space)
    return types.SimpleNamespace(cfg=cfg, policy=policy, collector_env=collector_env,
                                 evaluator_env=evaluator_env, buffer_=ReplayBuffer(1000))


@pytest.fixture
def dqn(tmp_path):
    s = _setup("cartpole-dqn", DQNPolicy, tmp_path / "run")
    yield s
    s.collector_env.close()
    s.evaluator_env.close()


@pytest.fixture
def ppo(tmp_path):
    s = _setup("cartpole-ppo", PPOPolicy, tmp_path / "run")
    yield s
    s.collector_env.close()
    s.evaluator_env.close()
