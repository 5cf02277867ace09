import pickle
import threading

import numpy as np
import pytest

from rlpipe.data import ReplayBuffer, SampleRatioController


def rows(ids, obs_dim=3):
    ids = np.asarray(ids)
    return {
        "obs": np.repeat(ids[:, None], obs_dim, axis=1).astype(np.float32),
        "action": ids.astype(np.int64),
        "reward": ids.astype(np.float32),
        "next_obs": np.repeat(ids[:, None] + 0.5, obs_dim, axis=1).astype(np.float32),
        "terminated": ids % 2 == 0,
        "truncated": ids % 3 == 0,
    }


def stored_ids(buf):
    return buf.state_dict()["data"]["action"].tolist()


def test_ring_overwrite_keeps_newest_rows_in_place():
    buf = ReplayBuffer(5, seed=0)
    buf.push(rows(range(3)))
    assert len(buf) == 3 and buf.position == 3
    buf.push(rows(range(3, 7)))
    assert len(buf) == 5 and buf.position == 2
    assert stored_ids(buf) == [5, 6, 2, 3, 4]


def test_push_larger_than_capacity_keeps_the_last_rows():
    buf = ReplayBuffer(5, seed=0)
    buf.push(rows(range(2)))
    buf.push(rows(range(100, 112)))  # 12 rows into 5
    assert buf.position == (2 + 12) % 5 and len(buf) == 5
    data = buf.state_dict()["data"]["action"]
    for i, row_id in enumerate(range(107, 112)):
        assert data[(2 + 12 - 5 + i) % 5] == row_id


def test_sample_is_uniform_over_held_rows_and_has_index():
    buf = ReplayBuffer(8, seed=1)
    buf.push(rows(range(4)))
    batch = buf.sample(4000)
    assert batch["index"].dtype == np.int64
    assert set(batch["index"].tolist()) == {0, 1, 2, 3}
    np.testing.assert_array_equal(batch["action"], batch["index"])  # rows match their index
    counts = np.bincount(batch["index"], minlength=4)
    assert counts.min() > 850  # 1000 expected each
    assert batch["obs"].shape == (4000, 3) and batch["obs"].dtype == np.float32


def test_samples_are_copies():
    buf = ReplayBuffer(4, seed=0)
    buf.push(rows(range(4)))
    batch = buf.sample(2)
    batch["obs"][:] = -1
    assert (buf.state_dict()["data"]["obs"] >= 0).all()


@pytest.mark.parametrize("capacity", [0, -3, 2.5, True, "10"])
def test_bad_capacity(capacity):
    with pytest.raises(ValueError, match="capacity must be a positive int"):
        ReplayBuffer(capacity)


def test_sampling_an_empty_buffer_says_so():
    with pytest.raises(RuntimeError, match="empty"):
        ReplayBuffer(4).sample(2)
    buf = ReplayBuffer(4)
    buf.push(rows(range(2)))
    with pytest.raises(ValueError, match="batch_size"):
        buf.sample(0)


def test_shape_mismatch_names_key_and_both_shapes():
    buf = ReplayBuffer(4)
    buf.push(rows(range(2)))
    bad = rows(range(2), obs_dim=4)
    with pytest.raises(ValueError) as err:
        buf.push(bad)
    msg = str(err.value)
    assert "'obs'" in msg and "(4,)" in msg and "(3,)" in msg


def test_key_mismatch_names_the_key():
    buf = ReplayBuffer(4)
    buf.push(rows(range(2)))
    missing = rows(range(2))
    del missing["reward"]
    with pytest.raises(KeyError, match="lacks key 'reward'"):
        buf.push(missing)
    extra = dict(rows(range(2)), logp=np.zeros(2))
    with pytest.raises(KeyError, match="has key 'logp'"):
        buf.push(extra)


def test_other_push_errors():
    buf = ReplayBuffer(4)
    with pytest.raises(ValueError, match="same leading batch dim"):
        buf.push({"obs": np.zeros((2, 3)), "reward": np.zeros(3)})
    with pytest.raises(ValueError, match="scalar"):
        buf.push({"obs": np.zeros((2, 3)), "reward": 1.0})
    with pytest.raises(KeyError, match="reserved"):
        buf.push(dict(rows(range(2)), index=np.arange(2)))
    buf.push(rows(range(2)))
    with pytest.raises(TypeError, match="'action' has dtype float64"):
        buf.push(dict(rows(range(2)), action=np.zeros(2)))
    assert len(buf) == 2  # failed pushes wrote nothing


def test_nested_observations_round_trip():
    buf = ReplayBuffer(6, seed=0)
    obs = {"pos": np.arange(8, dtype=np.float32).reshape(4, 2),
           "img": {"a": np.arange(16, dtype=np.uint8).reshape(4, 2, 2)},
           "tup": {"0": np.arange(4), "1": np.ones((4, 1))}}
    buf.push({"obs": obs, "reward": np.arange(4, dtype=np.float32)})
    batch = buf.sample(5)
    i = batch["index"]
    np.testing.assert_array_equal(batch["obs"]["pos"], obs["pos"][i])
    np.testing.assert_array_equal(batch["obs"]["img"]["a"], obs["img"]["a"][i])
    np.testing.assert_array_equal(batch["obs"]["tup"]["0"], obs["tup"]["0"][i])
    assert batch["obs"]["img"]["a"].dtype == np.uint8
    bad = {"obs": dict(obs, img={"a": np.zeros((4, 3, 2), np.uint8)}), "reward": np.zeros(4, np.float32)}
    with pytest.raises(ValueError, match=r"'obs/img/a'.*\(3, 2\).*\(2, 2\)"):
        buf.push(bad)


def test_nested_observations_save_and_load(tmp_path):
    buf = ReplayBuffer(3, seed=0)
    obs = {"pos": np.arange(10, dtype=np.float32).reshape(5, 2), "img": {"a": np.arange(5, dtype=np.uint8)}}
    buf.push({"obs": obs, "reward": np.arange(5, dtype=np.float32)})
    buf.save(str(tmp_path / "nested.npz"))
    other = ReplayBuffer(3)
    other.load(str(tmp_path / "nested.npz"))
    data = other.state_dict()["data"]
    np.testing.assert_array_equal(data["obs"]["img"]["a"], [3, 4, 2])
    assert data["obs"]["img"]["a"].dtype == np.uint8 and data["obs"]["pos"].shape == (3, 2)


def test_save_load_round_trip_after_wrap_around(tmp_path):
    ctrl = SampleRatioController(min_samples=2, max_updates_per_step=0.5)
    buf = ReplayBuffer(10, seed=3, controller=ctrl)
    for start in range(0, 23, 5):
        buf.push(rows(range(start, min(start + 5, 23))))
    buf.sample(4)
    assert buf.position == 3 and len(buf) == 10
    path = tmp_path / "buffer.npz"
    buf.save(str(path))

    other_ctrl = SampleRatioController(min_samples=2, max_updates_per_step=0.5)
    other = ReplayBuffer(10, seed=99, controller=other_ctrl)
    other.load(str(path))
    assert other.position == 3 and len(other) == 10
    assert stored_ids(other) == stored_ids(buf)
    assert other_ctrl.inserted == 23 and other_ctrl.sampled == 1
    # same RNG state: same samples; same position: the next push lands on the same rows
    a, b = buf.sample(16), other.sample(16)
    for key in ("index", "obs", "action", "terminated"):
        np.testing.assert_array_equal(a[key], b[key])
    buf.push(rows([1000, 1001]))
    other.push(rows([1000, 1001]))
    assert stored_ids(other) == stored_ids(buf)
    assert stored_ids(other)[3:5] == [1000, 1001]


def test_load_checks_capacity_and_kind(tmp_path):
    buf = ReplayBuffer(4)
    buf.push(rows(range(3)))
    path = str(tmp_path / "b.npz")
    buf.save(path)
    with pytest.raises(ValueError, match="capacity 4"):
        ReplayBuffer(5).load(path)
    empty = ReplayBuffer(4, seed=0)
    empty.load_state_dict(ReplayBuffer(4, seed=0).state_dict())  # empty state loads too
    assert len(empty) == 0


def test_state_dict_round_trip_and_pickle():
    buf = ReplayBuffer(4, seed=0)
    buf.push(rows(range(6)))
    other = ReplayBuffer(4)
    other.load_state_dict(buf.state_dict())
    assert stored_ids(other) == stored_ids(buf) and other.position == buf.position
    clone = pickle.loads(pickle.dumps(buf))
    np.testing.assert_array_equal(clone.sample(8)["index"], buf.sample(8)["index"])


def test_clear():
    buf = ReplayBuffer(4)
    buf.push(rows(range(3)))
    buf.clear()
    assert len(buf) == 0 and buf.position == 0
    with pytest.raises(RuntimeError, match="empty"):
        buf.sample(1)


def test_buffer_counts_inserts_and_samples_in_its_controller():
    ctrl = SampleRatioController(min_samples=4, max_updates_per_step=0.5)
    buf = ReplayBuffer(100, controller=ctrl)
    buf.push(rows(range(3)))
    assert ctrl.inserted == 3 and ctrl.allowed_updates() == 0
    buf.push(rows(range(3)))
    assert ctrl.allowed_updates() == 3
    buf.sample(2)
    buf.sample(2)
    assert ctrl.sampled == 2 and ctrl.allowed_updates() == 1


def test_one_writer_one_reader_never_see_torn_rows():
    capacity, n_pushes = 97, 1500
    ctrl = SampleRatioController()
    buf = ReplayBuffer(capacity, seed=0, controller=ctrl)
    buf.push(rows([0], obs_dim=64))
    errors, stop = [], threading.Event()
    pushed, samples = [1], [0]

    def writer():
        rng = np.random.default_rng(1)
        try:
            for _ in range(n_pushes):
                n = int(rng.integers(1, 40))
                buf.push(rows(range(pushed[0], pushed[0] + n), obs_dim=64))
                pushed[0] += n
        except Exception as e:  # reported by the assert below
            errors.append(e)
        finally:
            stop.set()

    def reader():
        try:
            while not stop.is_set():
                b = buf.sample(64)
                samples[0] += 1
                ids = b["action"]
                assert (b["obs"] == ids[:, None]).all(), "obs torn"
                assert (b["next_obs"] == ids[:, None] + 0.5).all(), "next_obs torn"
                assert (b["reward"] == ids).all() and (b["terminated"] == (ids % 2 == 0)).all()
        except Exception as e:
            errors.append(e)
            stop.set()

    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert samples[0] > 0
    assert ctrl.inserted == pushed[0] and ctrl.sampled == samples[0]
    ids = np.array(stored_ids(buf))
    assert sorted(ids.tolist()) == list(range(pushed[0] - capacity, pushed[0]))
