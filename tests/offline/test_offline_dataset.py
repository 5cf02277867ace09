"""OfflineDataset: observations held once, ReplayBuffer's batch keys, epochs without
replacement, exact resume, one-line refusals."""
import gymnasium as gym
import numpy as np
import pytest

from rlpipe.data import OfflineDataError, OfflineDataset, ReplayBuffer

from .episodes import DICT_SPACE, dict_obs_episodes, play


@pytest.fixture(scope="module")
def cartpole():
    env = gym.make("CartPole-v1")
    return play("CartPole-v1", 6), env.observation_space, env.action_space


def test_transitions_read_the_episodes_and_next_obs_is_the_following_observation(cartpole):
    episodes, obs_space, act_space = cartpole
    ds = OfflineDataset.from_episodes(episodes, obs_space, act_space, id="t/x-v0")
    lengths = [len(e["rewards"]) for e in episodes]
    assert len(ds) == sum(lengths) and ds.n_episodes == 6 and ds.id == "t/x-v0"
    np.testing.assert_allclose(ds.episode_returns, [e["rewards"].sum() for e in episodes])
    batch = ds.rows(np.arange(len(ds)))
    obs = np.concatenate([e["observations"][:-1] for e in episodes])
    nxt = np.concatenate([e["observations"][1:] for e in episodes])
    np.testing.assert_array_equal(batch["obs"], obs)
    np.testing.assert_array_equal(batch["next_obs"], nxt)
    np.testing.assert_array_equal(batch["terminated"], np.concatenate([e["terminations"] for e in episodes]))
    assert batch["reward"].dtype == np.float32 and batch["terminated"].dtype == bool


def test_observations_are_stored_once(cartpole):
    episodes, obs_space, act_space = cartpole
    ds = OfflineDataset.from_episodes(episodes, obs_space, act_space)
    obs_bytes = sum(e["observations"].astype(np.float32).nbytes for e in episodes)  # T+1 rows each
    held = ds._data.obs[()].nbytes
    assert held == obs_bytes < 2 * len(ds) * 4 * 4


def test_sample_has_the_replay_buffers_keys(cartpole):
    episodes, obs_space, act_space = cartpole
    ds = OfflineDataset.from_episodes(episodes, obs_space, act_space)
    buffer = ReplayBuffer(10)
    buffer.push({k: v[:4] for k, v in ds.rows(np.arange(4)).items() if k != "index"})
    ours, theirs = ds.sample(3), buffer.sample(3)
    assert set(ours) == set(theirs)
    for key in ours:
        assert ours[key].dtype == theirs[key].dtype and ours[key].shape == theirs[key].shape, key


def test_each_epoch_draws_every_row_once_and_the_last_batch_is_topped_up(cartpole):
    episodes, obs_space, act_space = cartpole
    ds = OfflineDataset.from_episodes(episodes, obs_space, act_space, seed=3)
    n, batch = len(ds), 7
    drawn, epochs = [], []
    for _ in range(3 * n // batch):
        drawn.append(ds.sample(batch)["index"])
        epochs.append(ds.epoch)
    flat = np.concatenate(drawn)
    for e in range(2):
        assert sorted(flat[e * n:(e + 1) * n]) == list(range(n))
    assert epochs == [(i + 1) * batch // n for i in range(len(epochs))]
    assert not np.array_equal(flat[:n], flat[n:2 * n])  # a new permutation per pass


def test_a_resumed_data_set_draws_the_same_batches(cartpole):
    episodes, obs_space, act_space = cartpole
    a = OfflineDataset.from_episodes(episodes, obs_space, act_space, seed=1)
    for _ in range(len(a) // 5 + 2):  # into the second pass
        a.sample(5)
    state = a.state_dict()
    expected = [a.sample(5)["index"] for _ in range(40)]
    b = OfflineDataset.from_episodes(episodes, obs_space, act_space, seed=99)
    b.load_state_dict(state)
    assert b.epoch == state["epoch"] == 1
    for want in expected:
        np.testing.assert_array_equal(b.sample(5)["index"], want)
    other = OfflineDataset.from_episodes(episodes[:2], obs_space, act_space)
    with pytest.raises(OfflineDataError, match="not of this data set"):
        other.load_state_dict(state)


def test_nested_dict_observations():
    episodes = dict_obs_episodes(3)
    ds = OfflineDataset.from_episodes(episodes, DICT_SPACE, gym.spaces.Discrete(3))
    batch = ds.rows(np.array([0, 5, 6]))
    assert set(batch["obs"]) == {"pos", "inner"} and batch["obs"]["inner"]["id"].dtype == np.int64
    np.testing.assert_array_equal(batch["obs"]["pos"][2], episodes[1]["observations"]["pos"][0])
    np.testing.assert_array_equal(batch["next_obs"]["pos"][1], episodes[0]["observations"]["pos"][6])
    np.testing.assert_array_equal(batch["next_obs"]["inner"]["id"][0],
                                  episodes[0]["observations"]["inner"]["id"][1])


def _bad(edit):
    episodes = dict_obs_episodes(3)
    edit(episodes)
    return episodes


@pytest.mark.parametrize("edit, message", [
    (lambda eps: eps.clear(), "empty"),
    (lambda eps: eps[1]["rewards"].__setitem__(2, np.nan), "episode 1 has reward nan at step 2"),
    (lambda eps: eps[2]["observations"]["pos"].__setitem__((4, 0), np.inf),
     r"episode 2 has a non-finite observation \(observations/pos\) at step 4"),
    (lambda eps: eps[0].__setitem__("actions", eps[0]["actions"][:-1]), "episode 0 has 5 actions but 6"),
    (lambda eps: eps[1]["observations"].__setitem__("pos", eps[1]["observations"]["pos"][:-1]),
     "episode 1 has 6 observations/pos but 6 steps"),
    (lambda eps: eps[0].pop("truncations"), "episode 0 has no 'truncations'"),
    (lambda eps: eps[2].update(rewards=np.zeros(0)), "episode 2 has no steps"),
])
def test_bad_data_is_refused_in_one_line(edit, message):
    with pytest.raises(OfflineDataError, match=message) as err:
        OfflineDataset.from_episodes(_bad(edit), DICT_SPACE, gym.spaces.Discrete(3), id="t/bad-v0")
    assert "\n" not in str(err.value)


def test_check_spaces_names_the_data_set_the_env_and_both_spaces(cartpole):
    episodes, obs_space, act_space = cartpole
    ds = OfflineDataset.from_episodes(episodes, obs_space, act_space, id="cartpole/r-v0")
    ds.check_spaces(gym.make("CartPole-v1").observation_space, gym.spaces.Discrete(2), "CartPole-v1")
    pendulum = gym.make("Pendulum-v1")
    with pytest.raises(OfflineDataError) as err:
        ds.check_spaces(pendulum.observation_space, pendulum.action_space, "Pendulum-v1")
    text = str(err.value)
    assert "\n" not in text and "'cartpole/r-v0'" in text and "'Pendulum-v1'" in text
    assert "(4,)" in text and "(3,)" in text
