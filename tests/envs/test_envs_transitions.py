"""Final observations, no pseudo-transitions, episode reports and seeding, in every mode."""

import gymnasium as gym
import numpy as np
import pytest
from tests.envs.env_fakes import CountingEnv

from rlpipe.envs import EnvManager
from rlpipe.envs._native import CartPoleStarts

MODES = ["sync", "async", "native"]
THETA_LIMIT = 12 * 2 * np.pi / 360


def rollout(manager, actions):
    first = manager.reset()
    return first, [manager.step(a) for a in actions]


def random_actions(n_steps, n_envs, seed=1):
    return np.random.default_rng(seed).integers(0, 2, size=(n_steps, n_envs))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_final_obs_matches_single_env_reference(mode):
    n, seed, actions = 2, 7, random_actions(120, 2)
    with EnvManager("CartPole-v1", n_envs=n, seed=seed, mode=mode) as m:
        first, results = rollout(m, actions)
    for i in range(n):
        ref = gym.make("CartPole-v1")
        obs, _ = ref.reset(seed=seed + i)
        np.testing.assert_array_equal(first[i], obs)
        ended = 0
        for a, r in zip(actions[:, i], results):
            obs, reward, terminated, truncated, _ = ref.step(a)
            assert r.valid[i] and r.reward[i] == reward
            assert (r.terminated[i], r.truncated[i]) == (terminated, truncated)
            np.testing.assert_array_equal(r.next_obs[i], obs)  # the true final obs at an end
            if terminated or truncated:
                ended += 1
                obs, _ = ref.reset()
            np.testing.assert_array_equal(r.obs[i], obs)  # the new episode's first obs
        assert ended >= 3


@pytest.mark.parametrize("block", [None, 3])  # None: the default; 3: start states drawn 3 at a time
def test_native_single_env_matches_single_env_reference(monkeypatch, block):
    if block is not None:
        monkeypatch.setattr(CartPoleStarts, "BLOCK", block)
    seed, actions = 3, random_actions(300, 1)
    with EnvManager("CartPole-v1", n_envs=1, seed=seed, mode="native") as m:
        first, results = rollout(m, actions)
    ref = gym.make("CartPole-v1")
    obs, _ = ref.reset(seed=seed)
    np.testing.assert_allclose(first[0], obs, atol=1e-6)
    ended = 0
    for a, r in zip(actions[:, 0], results):
        obs, reward, terminated, truncated, _ = ref.step(a)
        assert r.valid[0] and r.reward[0] == reward and r.terminated[0] == terminated
        np.testing.assert_allclose(r.next_obs[0], obs, atol=1e-5)
        if terminated or truncated:
            ended += 1
            obs, _ = ref.reset()
        np.testing.assert_allclose(r.obs[0], obs, atol=1e-5)
    assert ended >= 3


@pytest.mark.parametrize("mode", MODES)
def test_every_row_is_a_real_transition(mode):
    """Each next_obs follows from the acting obs by CartPole physics; ends are real ends."""
    n, actions = 4, random_actions(150, 4, seed=5)
    with EnvManager("CartPole-v1", n_envs=n, seed=11, mode=mode) as m:
        obs, results = rollout(m, actions)
    physics = gym.make("CartPole-v1").unwrapped
    physics.reset(seed=0)
    ends = 0
    for a, r in zip(actions, results):
        assert r.valid.all() and (r.reward == 1.0).all()  # a pseudo-step would have reward 0
        for i in range(n):
            physics.state = obs[i].astype(np.float64)
            physics.steps_beyond_terminated = None
            expected, *_ = physics.step(int(a[i]))
            np.testing.assert_allclose(r.next_obs[i], expected, atol=1e-5)
            done = r.terminated[i] or r.truncated[i]
            if r.terminated[i]:
                x, theta = r.next_obs[i][0], r.next_obs[i][2]
                assert abs(x) > 2.4 or abs(theta) > THETA_LIMIT
            if done:
                ends += 1
                assert np.all(np.abs(r.obs[i]) <= 0.05)  # a fresh CartPole start state
            else:
                np.testing.assert_array_equal(r.obs[i], r.next_obs[i])
        obs = r.obs
    assert ends >= 10


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_episodes_report_return_and_length(mode):
    with EnvManager(lambda: CountingEnv(length=3), n_envs=2, seed=0, mode=mode) as m:
        m.reset()
        reports = [m.step(np.zeros(2, dtype=np.int64)).episodes for _ in range(7)]
    assert [len(e) for e in reports] == [0, 0, 2, 0, 0, 2, 0]
    assert reports[2] == [{"env_id": 0, "return": 3.0, "length": 3},
                          {"env_id": 1, "return": 3.0, "length": 3}]


def test_native_episodes_agree_with_terminations():
    with EnvManager("CartPole-v1", n_envs=8, seed=0, mode="native") as m:
        m.reset()
        lengths = np.zeros(8, dtype=int)
        for a in random_actions(100, 8):
            r = m.step(a)
            lengths += 1
            ended = np.flatnonzero(r.terminated | r.truncated)
            assert [e["env_id"] for e in r.episodes] == ended.tolist()
            for e in r.episodes:
                assert e["length"] == lengths[e["env_id"]] == e["return"]
            lengths[ended] = 0


def test_step_result_dtypes():
    with EnvManager("cartpole", n_envs=3, seed=0, mode="sync") as m:
        m.reset()
        r = m.step(np.array([0, 1, 0]))
    assert r.reward.dtype == np.float32 and r.reward.shape == (3,)
    assert r.terminated.dtype == np.bool_ and r.truncated.dtype == np.bool_
    assert r.valid.dtype == np.bool_ and r.valid.all()
    assert r.obs.dtype == np.float32 and r.obs.shape == (3, 4)


def obs_stream(seed, mode, n_envs=3, steps=80):
    with EnvManager("CartPole-v1", n_envs=n_envs, seed=seed, mode=mode) as m:
        first, results = rollout(m, random_actions(steps, n_envs, seed=2))
    return np.stack([first] + [r.obs for r in results] + [r.next_obs for r in results])


@pytest.mark.parametrize("mode", MODES)
def test_same_seed_same_stream(mode):
    a, b = obs_stream(5, mode), obs_stream(5, mode)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, obs_stream(6, mode))


def test_sync_and_async_streams_agree():
    np.testing.assert_array_equal(obs_stream(9, "sync"), obs_stream(9, "async"))


def test_reset_with_a_new_seed_reseeds():
    with EnvManager("CartPole-v1", n_envs=2, seed=1, mode="sync") as m:
        first = m.reset()
        again = m.reset()  # continues the random streams
        reseeded = m.reset(seed=1)
    np.testing.assert_array_equal(first, reseeded)
    assert not np.array_equal(first, again)


def test_seed_also_seeds_the_action_spaces():
    def samples():
        with EnvManager("cartpole", n_envs=4, seed=2, mode="sync") as m:
            return [m.batch_action_space.sample() for _ in range(5)], m.action_space.sample()

    (a, single_a), (b, single_b) = samples(), samples()
    np.testing.assert_array_equal(a, b)
    assert single_a == single_b


def test_native_reset_with_a_seed_restarts_the_stream_of_that_seed():
    actions = random_actions(200, 8)
    with EnvManager("CartPole-v1", n_envs=8, seed=0, mode="native") as m:
        m.reset()
        for a in actions:  # draws start states ahead, which reset(seed=...) must drop
            m.step(a)
        again = [m.reset(seed=5)] + [m.step(a).obs for a in actions]
    with EnvManager("CartPole-v1", n_envs=8, seed=5, mode="native") as fresh:
        first = [fresh.reset()] + [fresh.step(a).obs for a in actions]
    for a, b in zip(again, first):
        np.testing.assert_array_equal(a, b)
