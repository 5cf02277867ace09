"""Minari on disk: rlpipe's data sets load with minari.load_dataset as they are, and Minari's
own (EpisodeBuffer, DataCollector where jax is installed) load in rlpipe."""
import importlib.util
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

minari = pytest.importorskip("minari")

from rlpipe.data import (OfflineDataError, dataset_summary, load_dataset,  # noqa: E402
                         local_datasets, write_dataset)

from .episodes import DICT_SPACE, dict_obs_episodes, play  # noqa: E402


def test_written_by_rlpipe_loads_with_minari_unchanged(minari_root):
    episodes = play("CartPole-v1", 4)
    path = write_dataset("cartpole/rand-v0", episodes, "CartPole-v1", algorithm_name="random")
    assert path == minari_root / "cartpole/rand-v0" and path.is_dir()
    theirs = minari.load_dataset("cartpole/rand-v0")
    assert theirs.total_episodes == 4 and theirs.spec.env_spec.id == "CartPole-v1"
    for ep, mine in zip(theirs.iterate_episodes(), episodes):
        np.testing.assert_array_equal(ep.observations, mine["observations"])
        np.testing.assert_array_equal(ep.actions, mine["actions"])
        np.testing.assert_array_equal(ep.terminations, mine["terminations"])
    ours = load_dataset("cartpole/rand-v0", seed=1)
    assert len(ours) == theirs.total_steps and ours.id == "cartpole/rand-v0"
    np.testing.assert_allclose(ours.episode_returns, [e["rewards"].sum() for e in episodes])
    assert ours.observation_space == gym.make("CartPole-v1").observation_space


def test_list_and_summary(minari_root):
    episodes = play("Pendulum-v1", 2)
    write_dataset("pendulum/a-v0", episodes, "Pendulum-v1", algorithm_name="random")
    write_dataset("pendulum/a-v1", episodes[:1], "Pendulum-v1", algorithm_name="random")
    assert local_datasets() == ["pendulum/a-v0", "pendulum/a-v1"]
    info = dataset_summary("pendulum/a-v0")
    returns = [e["rewards"].sum() for e in episodes]
    assert info["episodes"] == 2 and info["transitions"] == 400 and info["env"] == "Pendulum-v1"
    assert info["mean_return"] == pytest.approx(np.mean(returns), rel=1e-5)
    assert info["min_return"] == pytest.approx(min(returns), rel=1e-5)
    assert info["algorithm"] == "random" and "Box" in info["action_space"]


def test_dict_observations_written_by_minaris_own_api_load(minari_root):
    from minari.data_collector import EpisodeBuffer

    episodes = dict_obs_episodes(3)
    buffers = [EpisodeBuffer(observations=e["observations"], actions=e["actions"],
                             rewards=list(e["rewards"]), terminations=list(e["terminations"]),
                             truncations=list(e["truncations"])) for e in episodes]
    minari.create_dataset_from_buffers("grid/dict-v0", buffers, observation_space=DICT_SPACE,
                                       action_space=gym.spaces.Discrete(3),
                                       algorithm_name="test", author="t", author_email="t",
                                       code_permalink="t", description="t")
    ds = load_dataset("grid/dict-v0")
    assert len(ds) == 18 and ds.n_episodes == 3
    batch = ds.rows(np.array([6]))  # episode 1, step 0
    np.testing.assert_array_equal(batch["obs"]["pos"][0], episodes[1]["observations"]["pos"][0])
    np.testing.assert_array_equal(batch["next_obs"]["inner"]["id"][0],
                                  episodes[1]["observations"]["inner"]["id"][1])


@pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                    reason='DataCollector needs jax (pip install "minari[create]")')
def test_a_data_set_from_minaris_data_collector_loads(minari_root):
    env = minari.DataCollector(gym.make("CartPole-v1"))
    for k in range(3):
        env.reset(seed=k)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            done = terminated or truncated
    env.create_dataset("cartpole/collector-v0", algorithm_name="random")
    ds = load_dataset("cartpole/collector-v0")
    assert ds.n_episodes == 3 and len(ds) == minari.load_dataset("cartpole/collector-v0").total_steps


def test_a_missing_id_names_the_root_what_is_there_and_how_to_make_one(minari_root):
    write_dataset("cartpole/rand-v0", play("CartPole-v1", 1), "CartPole-v1", algorithm_name="r")
    with pytest.raises(OfflineDataError) as err:
        load_dataset("cartpole/medium-v0")
    text = str(err.value)
    assert "\n" not in text and str(minari_root) in text and "cartpole/rand-v0" in text
    assert "rlpipe dataset collect" in text
    with pytest.raises(OfflineDataError, match="malformed"):
        load_dataset("no version")


def test_an_existing_id_is_refused_unless_overwrite(minari_root):
    episodes = play("CartPole-v1", 2)
    write_dataset("cartpole/rand-v0", episodes, "CartPole-v1", algorithm_name="r")
    with pytest.raises(OfflineDataError, match="already exists.*overwrite"):
        write_dataset("cartpole/rand-v0", episodes[:1], "CartPole-v1", algorithm_name="r")
    write_dataset("cartpole/rand-v0", episodes[:1], "CartPole-v1", algorithm_name="r", overwrite=True)
    assert load_dataset("cartpole/rand-v0").n_episodes == 1


def test_bad_episodes_are_refused_before_anything_is_written(minari_root):
    episodes = play("CartPole-v1", 2)
    episodes[1]["rewards"][3] = np.nan
    with pytest.raises(OfflineDataError, match="episode 1 has reward nan at step 3"):
        write_dataset("cartpole/nan-v0", episodes, "CartPole-v1", algorithm_name="r")
    assert not (minari_root / "cartpole/nan-v0").exists()


def test_importing_rlpipe_data_does_not_import_minari():
    code = "import sys, rlpipe.data; print('minari' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
