"""SISL multiwalker_v9 through the multi-agent path, with the real env: walkers that fall leave
the episode while the others go on, and the learner's batch holds exactly the agent steps the
env took (each checked against a replay of the same seeds and actions), the others masked."""
from __future__ import annotations

import numpy as np
import pytest
from easydict import EasyDict

pytest.importorskip("pettingzoo")
pytest.importorskip("Box2D")

from rlpipe.contexts import MultiAgentRLContext  # noqa: E402
from rlpipe.engine import Task  # noqa: E402
from rlpipe.envs import MultiAgentEnvManager  # noqa: E402
from rlpipe.middleware import StepCollector, gae_estimator, multistep_trainer  # noqa: E402
from rlpipe.policies import MAPPOPolicy  # noqa: E402
from rlpipe.zoo.multiwalker._env import multiwalker_env  # noqa: E402
from rlpipe.zoo.multiwalker.mappo import ENV_ID  # noqa: E402

LEAVING = dict(n_walkers=3, shared_reward=False, terminate_on_fall=False, remove_on_fall=True)
AGENTS = ["walker_0", "walker_1", "walker_2"]


def _until_one_leaves(env, rng, limit=400):
    """Step `env` with random torques until a walker has left and others remain."""
    for _ in range(limit):
        actions = {a: rng.uniform(-1, 1, 4).astype(np.float32) for a in env.agents}
        _, _, term, _, _ = env.step(actions)
        if any(term.values()) and env.agents:
            return [a for a, done in term.items() if done]
    raise AssertionError(f"no walker left within {limit} random steps")


def test_state_is_pettingzoos_and_survives_a_removed_walker():
    env = multiwalker_env(**LEAVING)
    env.reset(seed=0)
    np.testing.assert_allclose(env.state(), env.env.state(), atol=1e-5)  # all present
    left = _until_one_leaves(env, np.random.default_rng(0))
    assert left and set(left).isdisjoint(env.agents)  # a fall is a termination
    with pytest.raises(AttributeError):  # PettingZoo's own state() with a removed walker
        env.env.state()
    state = env.state()
    assert state.shape == env.state_space.shape == (75,)
    for agent in left:
        k = AGENTS.index(agent)
        np.testing.assert_array_equal(state[24 * k:24 * (k + 1)], 0.0)
    assert all(np.any(state[24 * AGENTS.index(a):24 * (AGENTS.index(a) + 1)])
               for a in env.agents)
    env.close()


def test_passes_pettingzoos_parallel_api_test():
    from pettingzoo.test import parallel_api_test
    from pettingzoo.utils.env import ParallelEnv

    env = multiwalker_env(**LEAVING)
    assert isinstance(env, ParallelEnv)
    assert env.unwrapped is env.env.unwrapped  # PettingZoo's own env below the mends
    parallel_api_test(env, num_cycles=200)
    env.close()


def test_time_limit_is_a_truncation():
    env = multiwalker_env(**LEAVING, max_cycles=40)
    env.reset(seed=1)
    for t in range(40):  # small torques: nobody falls in 40 steps
        _, _, term, trunc, _ = env.step({a: np.zeros(4, np.float32) + 0.1 for a in env.agents})
    assert t == 39 and not env.agents
    assert not any(term.values()) and all(trunc.values())
    env.close()


def _learner_batch(mode: str, steps_per_env: int = 100) -> dict:
    env = MultiAgentEnvManager(ENV_ID, n_envs=2, seed=3, mode=mode, env_kwargs=LEAVING)
    policy = MAPPOPolicy({"seed": 0, "model": {"hidden": (16,)},
                          "learn": {"epoch_per_collect": 1}}, env.observation_space,
                         env.action_space, n_agents=env.n_agents, state_space=env.state_space)
    cfg = EasyDict({"policy": {"collect": {"n_sample": 2 * steps_per_env},
                               "learn": {"gamma": 0.99, "gae_lambda": 0.9}}})
    batches = []
    try:
        with Task().start(ctx=MultiAgentRLContext(agents=env.agents)) as task:
            task.use(StepCollector(cfg, policy.collect_mode, env))
            task.use(gae_estimator(cfg, policy.collect_mode))
            task.use(lambda ctx: batches.append(ctx.train_data))
            task.use(multistep_trainer(cfg, policy.learn_mode))
            task.run(max_step=1)
    finally:
        env.close()
    return batches[0]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_fallen_walkers_rows_are_masked_in_the_learners_batch(mode):
    batch = _learner_batch(mode)
    mask = np.asarray(batch["agent_mask"], dtype=bool)
    rows, n_envs = mask.shape[0], 2
    left_early = 0
    for e in range(n_envs):  # replay env e's steps on a bare env with the same seed and actions
        bare = multiwalker_env(**LEAVING)
        obs, _ = bare.reset(seed=3 + e)
        for row in range(e, rows, n_envs):  # rows are step-major: t * n_envs + env
            present = [a for a in AGENTS if a in bare.agents]
            assert [AGENTS[k] for k in np.flatnonzero(mask[row])] == present, row
            for k, a in enumerate(AGENTS):
                if a in present:
                    np.testing.assert_allclose(batch["obs"][row, k], obs[a], atol=1e-6)
            actions = {a: np.asarray(batch["action"][row, AGENTS.index(a)]) for a in present}
            obs, rew, term, trunc, _ = bare.step(actions)
            for k, a in enumerate(AGENTS):
                expect = (rew[a], term[a], trunc[a]) if a in present else (0.0, False, False)
                got = (batch["reward"][row, k], batch["terminated"][row, k],
                       batch["truncated"][row, k])
                assert got[0] == pytest.approx(expect[0], abs=1e-4) and tuple(map(bool, got[1:])) \
                    == expect[1:], (row, a, got, expect)
            if any(term.values()) and bare.agents:
                left_early += 1
            if not bare.agents:
                obs, _ = bare.reset()
        bare.close()
    assert left_early > 0, "the rollout has no walker that left before the others"
    assert (~mask).any() and mask.any(axis=1).all()  # masked rows, never an empty env row
