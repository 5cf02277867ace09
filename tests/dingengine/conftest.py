"""CartPole set-ups for DI-engine's call forms (the seed003 set-up: tiny budgets, stop_value 0
so that `task.run(max_step=...)` ends after the first evaluation)."""
import pytest

from rlpipe.policies import DQNPolicy, PPOPolicy
from tests.seed003.conftest import _setup


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
