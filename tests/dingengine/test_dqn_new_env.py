"""Port of DI-engine's `ding/example/dqn_new_env.py`, in its structure: DQN on CartPole-v0 with
envs that the script makes itself (`env_fn`, a factory per env) under DI-engine's new env
manager, `EnvSupervisor(type_=ChildType.THREAD, env_fn=[...])`. Here that manager is
`EnvManager(env_fn, n_envs=N, seed=cfg.seed, mode="sync")`: the user's factory, its envs stepped
in this process (`mode="async"` is `ChildType.PROCESS`). The rest is rlpipe's construction of the
config, model and buffer, as in the `dqn.py` port. The same script runs on an env class the
user writes (`Corridor`), given as the factory."""
import logging

import gymnasium as gym
import numpy as np
import pytest

from rlpipe import set_pkg_seed, task
from rlpipe.contexts import OnlineRLContext
from rlpipe.data import ReplayBuffer
from rlpipe.envs import EnvManager
from rlpipe.middleware import (CkptSaver, OffPolicyLearner, StepCollector, data_pusher,
                               eps_greedy_handler, interaction_evaluator, termination_checker)
from rlpipe.models import QNetwork
from rlpipe.policies import DQNPolicy
from rlpipe.zoo import get_entry

# DI-engine's stop value for CartPole-v0 is 195 (its episodes end at 200 steps); the learning
# check stops at 150, which an untrained greedy DQN (about 10) is far from.
LEARNED = 150.0

# gymnasium warns that CartPole-v0 is out of date; the example runs v0 (200-step episodes).
pytestmark = pytest.mark.filterwarnings("ignore:.*CartPole-v0 is out of date")


def make_cartpole_v0():
    """The script's own env factory (DI-engine: `lambda: DingEnvWrapper(gym.make(...))`)."""
    return gym.make("CartPole-v0")


class Corridor(gym.Env):
    """An env of the user's own, unknown to gymnasium's registry: walk right along 6 cells
    (the observation is the cell, one-hot) to the goal, which pays 1 and ends the episode;
    an episode is cut after 20 steps."""

    observation_space = gym.spaces.Box(0.0, 1.0, (6,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.cell, self.steps = 0, 0
        return self._obs(), {}

    def step(self, action):
        self.cell = min(self.cell + 1, 5) if action == 1 else max(self.cell - 1, 0)
        self.steps += 1
        at_goal = self.cell == 5
        return self._obs(), float(at_goal), at_goal, self.steps >= 20, {}

    def _obs(self):
        return np.eye(6, dtype=np.float32)[self.cell]


def dqn_new_env_main(cfg, async_mode=False, env_fn=make_cartpole_v0):
    """DI-engine's dqn_new_env.py, in its order, on the envs `env_fn` makes; returns the
    evaluations (env_step, value) the run made and the policy."""
    logging.getLogger().setLevel(logging.INFO)
    evaluations = []
    with task.start(async_mode=async_mode, ctx=OnlineRLContext()):
        collector_env = EnvManager(env_fn, n_envs=cfg.env.n_envs, seed=cfg.seed, mode="sync")
        evaluator_env = EnvManager(env_fn, n_envs=cfg.env.eval_n_envs, seed=cfg.seed,
                                   mode="sync")

        set_pkg_seed(cfg.seed, use_cuda=False)

        model = QNetwork(collector_env.observation_space, collector_env.action_space.n,
                         **cfg.policy.model)
        buffer_ = ReplayBuffer(cfg.replay.capacity)
        policy = DQNPolicy(cfg.policy, model=model)

        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.on("eval_end", lambda ctx: evaluations.append((ctx.env_step, ctx.eval_value)))
        task.use(eps_greedy_handler(cfg))
        task.use(StepCollector(cfg, policy.collect_mode, collector_env))
        task.use(data_pusher(cfg, buffer_))
        task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
        task.use(CkptSaver(cfg, policy, train_freq=100))
        task.use(termination_checker(max_env_step=cfg.max_env_step))
        task.run()
    collector_env.close()
    evaluator_env.close()
    return evaluations, policy


def _cfg(run_dir):
    cfg = get_entry("cartpole-dqn").resolve()
    cfg.run_dir = str(run_dir)
    cfg.env.n_envs, cfg.env.eval_n_envs = 8, 5
    cfg.env.stop_value = LEARNED
    cfg.policy.eval.evaluator.update(eval_freq=100, n_episode=5)
    return cfg


@pytest.mark.parametrize("async_mode", [False, True], ids=["sync", "async"])
def test_dqn_new_env_example_runs_on_the_scripts_own_env_factory(tmp_path, async_mode):
    cfg = _cfg(tmp_path / "run")
    cfg.policy.collect.update(n_sample=32, random_collect_size=0)
    cfg.policy.learn.update(batch_size=16, update_per_collect=2)
    cfg.max_env_step = 128
    evaluations, policy = dqn_new_env_main(cfg, async_mode)
    assert policy.obs_space == gym.make("CartPole-v0").observation_space
    assert evaluations and evaluations[0][0] == 0  # the evaluator ran on the factory's envs
    assert policy.train_iter > 0
    assert (tmp_path / "run" / "ckpt" / "final.pt").is_file()


def test_dqn_new_env_example_runs_on_an_env_class_of_the_users_own(tmp_path):
    cfg = _cfg(tmp_path / "run")
    cfg.policy.collect.update(n_sample=32, random_collect_size=0)
    cfg.policy.learn.update(batch_size=16, update_per_collect=2)
    cfg.max_env_step = 128
    evaluations, policy = dqn_new_env_main(cfg, env_fn=Corridor)
    assert policy.obs_space == Corridor.observation_space and policy.n_actions == 2
    assert evaluations[0][0] == 0 and 0.0 <= evaluations[0][1] <= 1.0  # Corridor's returns
    assert policy.train_iter > 0


@pytest.mark.parametrize("async_mode", [
    False, pytest.param(True, marks=pytest.mark.slow)], ids=["sync", "async"])
def test_dqn_new_env_example_learns_cartpole_v0(tmp_path, async_mode):
    # The zoo's cartpole-dqn config, as DI-engine's example takes dizoo's: it stops at the
    # evaluation that reaches LEARNED, which this seed does at 1,536 env steps (sync, and in
    # each of four async runs).
    cfg = _cfg(tmp_path / "run")
    cfg.max_env_step = 4000
    evaluations, _ = dqn_new_env_main(cfg, async_mode)
    (first_step, untrained), (last_step, learned) = evaluations[0], evaluations[-1]
    assert first_step == 0 and untrained < LEARNED
    assert learned >= LEARNED and last_step < cfg.max_env_step
