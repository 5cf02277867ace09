"""The zoo's exact resume (RunState) saves and restores the collector's hidden states."""
import functools

import numpy as np
from easydict import EasyDict

from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import Task
from rlpipe.envs import EnvManager
from rlpipe.middleware import StepCollector
from rlpipe.runs import RunDir, Verified
from rlpipe.pipelines.resume import RunState
from tests.envs.env_fakes import CountingEnv

from .fakes import CountingPolicy
from .test_acting_state import collect

CFG = EasyDict(policy=dict(collect=dict(n_sample=6)))


def pipeline():
    env = EnvManager(functools.partial(CountingEnv, 5), n_envs=2, seed=0, mode="sync")
    eval_env = EnvManager(functools.partial(CountingEnv, 5), n_envs=1, seed=1, mode="sync")
    policy = CountingPolicy(env.observation_space, env.action_space)
    return env, eval_env, StepCollector(CFG, policy.collect_mode, env)


def test_run_state_round_trip_restores_the_hidden_state_mid_episode(tmp_path):
    RunDir(str(tmp_path)).ckpt.mkdir(parents=True)
    env, eval_env, collector = pipeline()
    task = Task()
    with task.start(ctx=OnlineRLContext()):
        collect(collector, OnlineRLContext())  # t = 3 in both envs: mid-episode
        resume = RunState(str(tmp_path), env, eval_env, collector)(task.ctx)
        later = collect(collector, OnlineRLContext())
    assert resume["exact"]

    env2, eval_env2, collector2 = pipeline()
    RunState(str(tmp_path), env2, eval_env2, collector2).restore(
        resume, Verified(RunDir(str(tmp_path)), "test", None))
    np.testing.assert_array_equal(collector2.acting.cursor.state["count"][:, 0], [3, 3])
    resumed = collect(collector2, OnlineRLContext())
    for x, y in zip(later, resumed, strict=True):
        np.testing.assert_array_equal(x["first"], y["first"])
        np.testing.assert_array_equal(x["state"]["count"], y["state"]["count"])
        np.testing.assert_array_equal(x["state"]["memory"]["first_obs"],
                                      y["state"]["memory"]["first_obs"])
