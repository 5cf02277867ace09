"""Port of DI-engine's `ding/example/dqn_frozen_lake.py`, in its structure: n-step DQN on the
4x4 FrozenLake without slipping, with `nstep_reward_enhancer`, `CkptSaver(policy, path)` and
`final_ctx_saver(path)`. dizoo's `FrozenLakeEnv` one-hot encodes gymnasium's `FrozenLake-v1`;
here `EnvManager("FrozenLake-v1", env_kwargs=...)` gives its Discrete(16) observations, which
`QNetwork` one-hot encodes itself. The config is the generic `dqn@FrozenLake-v1` entry with
dizoo's `frozen_lake_dqn_config.py` values and the example's `nstep = 5`."""
import logging
import pickle

import numpy as np
import pytest

from rlpipe import set_pkg_seed, task
from rlpipe.contexts import OnlineRLContext
from rlpipe.data import ReplayBuffer
from rlpipe.envs import EnvManager
from rlpipe.middleware import (CkptSaver, OffPolicyLearner, StepCollector, data_pusher,
                               eps_greedy_handler, final_ctx_saver, interaction_evaluator,
                               nstep_reward_enhancer, termination_checker)
from rlpipe.models import QNetwork
from rlpipe.policies import DQNPolicy
from rlpipe.zoo import get_entry

# Reaching the goal is FrozenLake's only reward: a greedy evaluation returns 1 when the policy
# walks there, 0 when it falls into a hole or wanders until the 100-step limit.
REACHES_GOAL = 1.0


def dqn_frozen_lake_main(cfg, async_mode=False):
    """DI-engine's dqn_frozen_lake.py, in its order; returns the evaluations (env_step,
    value) the run made and the buffer."""
    logging.getLogger().setLevel(logging.INFO)
    evaluations = []
    with task.start(async_mode=async_mode, ctx=OnlineRLContext()):
        collector_env = EnvManager(cfg.env.id, n_envs=cfg.env.n_envs, seed=cfg.seed,
                                   env_kwargs=cfg.env.env_kwargs)
        evaluator_env = EnvManager(cfg.env.id, n_envs=cfg.env.eval_n_envs, seed=cfg.seed,
                                   env_kwargs=cfg.env.env_kwargs)
        set_pkg_seed(cfg.seed, use_cuda=False)

        model = QNetwork(collector_env.observation_space, collector_env.action_space.n,
                         **cfg.policy.model)
        buffer_ = ReplayBuffer(cfg.replay.capacity)
        policy = DQNPolicy(cfg.policy, model=model)

        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.on("eval_end", lambda ctx: evaluations.append((ctx.env_step, ctx.eval_value)))
        task.use(eps_greedy_handler(cfg))
        task.use(StepCollector(cfg, policy.collect_mode, collector_env))
        task.use(nstep_reward_enhancer(cfg))
        task.use(data_pusher(cfg, buffer_))
        task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
        task.use(CkptSaver(policy, cfg.run_dir, train_freq=100))
        task.use(final_ctx_saver(cfg.run_dir))
        task.use(termination_checker(max_env_step=cfg.max_env_step))
        task.run()
    collector_env.close()
    evaluator_env.close()
    return evaluations, buffer_


def frozen_lake_cfg(run_dir):
    """`dqn@FrozenLake-v1` with dizoo's frozen_lake_dqn_config.py values. DI-engine's DQN
    updates its target network every 100 learn steps, which that config leaves as it is."""
    cfg = get_entry("dqn@FrozenLake-v1").resolve()
    cfg.run_dir = str(run_dir)  # DI-engine: exp_name
    cfg.env.env_kwargs = dict(map_name="4x4", is_slippery=False)
    cfg.env.n_envs, cfg.env.eval_n_envs = 8, 5
    cfg.env.stop_value = REACHES_GOAL  # dizoo's 5 is out of reach: a return is 0 or 1
    cfg.policy.model.update(hidden=(128, 128, 64), dueling=True)
    cfg.policy.learn.update(nstep=5, gamma=0.97, update_per_collect=5, batch_size=64, lr=1e-3,
                            target_update_freq=100)
    cfg.policy.collect.n_sample = 8
    cfg.policy.eval.evaluator.update(eval_freq=40, n_episode=5)
    cfg.policy.other.eps.update(type="exp", start=0.95, end=0.1, decay=10000)
    cfg.replay.capacity = 20000
    return cfg


@pytest.mark.parametrize("async_mode", [False, True], ids=["sync", "async"])
def test_dqn_frozen_lake_example_runs_with_five_step_rows(tmp_path, async_mode):
    cfg = frozen_lake_cfg(tmp_path / "run")
    cfg.max_env_step = 256
    _, buffer_ = dqn_frozen_lake_main(cfg, async_mode)
    rows = buffer_.sample(len(buffer_))
    assert rows["obs"].dtype.kind == "i" and set(np.unique(rows["obs"])) <= set(range(16))
    gamma = cfg.policy.learn.gamma
    assert np.isclose(rows["discount"], gamma ** 5).any()  # 5-step rows; fewer at episode ends
    with open(tmp_path / "run" / "result.pkl", "rb") as f:
        result = pickle.load(f)
    assert result["env_step"] >= 256 and result["train_iter"] > 0
    assert (tmp_path / "run" / "ckpt" / "final.pt").is_file()


@pytest.mark.parametrize("async_mode", [False, True], ids=["sync", "async"])
def test_dqn_frozen_lake_example_learns_to_reach_the_goal(tmp_path, async_mode):
    # With dizoo's exploration (ε from 0.95, decaying over 10,000 env steps) the greedy policy
    # of this seed first reaches the goal after 300 to 500 env steps (sync or async); the run
    # stops there.
    cfg = frozen_lake_cfg(tmp_path / "run")
    cfg.max_env_step = 4000
    evaluations, _ = dqn_frozen_lake_main(cfg, async_mode)
    (first_step, untrained), (last_step, learned) = evaluations[0], evaluations[-1]
    assert first_step == 0 and untrained < REACHES_GOAL
    assert learned >= REACHES_GOAL and last_step < cfg.max_env_step
