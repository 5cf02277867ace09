import pickle

import pytest

from rlpipe.data import UNLIMITED, ReplayBuffer, SampleRatioController


def test_min_samples_then_ratio():
    c = SampleRatioController(min_samples=100, max_updates_per_step=0.25)
    c.on_insert(99)
    assert c.allowed_updates() == 0 and not c.can_sample()
    c.on_insert(1)
    assert c.allowed_updates() == 25  # floor(100 * 0.25) - 0
    c.on_sample(25)
    assert c.allowed_updates() == 0 and not c.can_sample()
    c.on_insert(3)
    assert c.allowed_updates() == 0
    c.on_insert(1)
    assert c.allowed_updates() == 1 and c.can_sample()


def test_ratio_is_exact_and_unbounded_without_ratio():
    c = SampleRatioController(max_updates_per_step=0.57)
    c.on_insert(100)
    assert c.allowed_updates() == 57  # 100 * 0.57 is 56.99999... in floats
    c = SampleRatioController(min_samples=10)
    assert c.allowed_updates() == 0
    c.on_insert(10)
    assert c.allowed_updates() == UNLIMITED
    c = SampleRatioController(max_updates_per_step=4.0)
    c.on_insert(3)
    c.on_sample(20)  # sampled past the budget (e.g. without asking): never negative
    assert c.allowed_updates() == 0


def test_training_cannot_run_away_from_collection():
    ratio = 2.0
    ctrl = SampleRatioController(min_samples=50, max_updates_per_step=ratio)
    buf = ReplayBuffer(1000, seed=0, controller=ctrl)
    import numpy as np

    updates = 0
    for step in range(300):
        buf.push({"obs": np.zeros((1, 2)), "reward": np.zeros(1)})
        # a greedy learner that would train 100 times per step if it could
        for _ in range(100):
            if not ctrl.can_sample():
                break
            buf.sample(8)
            updates += 1
        assert updates <= ratio * (step + 1)
        if step + 1 < 50:
            assert updates == 0
    assert updates == ctrl.sampled == 600 and ctrl.inserted == 300


def test_state_dict_round_trip_and_pickle():
    c = SampleRatioController(min_samples=5, max_updates_per_step=0.5)
    c.on_insert(40)
    c.on_sample(7)
    d = SampleRatioController(min_samples=5, max_updates_per_step=0.5)
    d.load_state_dict(c.state_dict())
    assert (d.inserted, d.sampled, d.allowed_updates()) == (40, 7, 13)
    e = pickle.loads(pickle.dumps(c))
    assert e.allowed_updates() == 13
    e.on_insert(2)
    assert e.allowed_updates() == 14


@pytest.mark.parametrize("kw", [{"min_samples": -1}, {"max_updates_per_step": 0}, {"max_updates_per_step": -1.0}])
def test_bad_arguments(kw):
    with pytest.raises(ValueError):
        SampleRatioController(**kw)
