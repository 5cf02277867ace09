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


# -- UpdateSchedule: every rule in one object, with the reason ---------------------------------

def test_sample_ratio_controller_is_the_update_schedule():
    from rlpipe.data import UpdateSchedule

    assert SampleRatioController is UpdateSchedule
    c = SampleRatioController(10, 0.5)  # the old positional form still means min_samples, ratio
    assert (c.min_samples, c.max_updates_per_step, c.per_iteration, c.batch_size) == (10, 0.5, None, None)


def test_allowed_names_the_rule_that_decided():
    from rlpipe.data import UpdateSchedule

    s = UpdateSchedule(min_samples=100, max_updates_per_step=0.5, per_iteration=8, batch_size=32)
    s.on_insert(40)
    assert s.allowed(40) == (0, "0 updates: warm-up, 40 of min_samples 100 inserted")
    s.on_insert(60)
    assert s.allowed(20)[0] == 0 and "fewer than batch_size 32" in s.allowed(20)[1]
    assert s.allowed(100) == (8, "8 updates: update_per_collect")
    s.on_sample(45)  # budget floor(100 * 0.5) = 50, 45 done: 5 left
    n, reason = s.allowed(100)
    assert n == 5 and reason.startswith("5 updates: ratio cap") and "45 done" in reason
    s.on_sample(5)
    assert s.allowed(100)[0] == 0 and "ratio cap" in s.allowed(100)[1]


def test_from_config_holds_the_default_ratio_rule():
    from easydict import EasyDict

    from rlpipe.data import UpdateSchedule

    cfg = EasyDict(replay=dict(min_samples=64, max_updates_per_step=None),
                   policy=dict(learn=dict(update_per_collect=3, batch_size=16), collect=dict(n_sample=6)))
    s = UpdateSchedule.from_config(cfg)
    assert (s.min_samples, s.max_updates_per_step, s.per_iteration, s.batch_size) == (64, 0.5, 3, 16)
    cfg.replay.max_updates_per_step = 2.0
    assert UpdateSchedule.from_config(cfg).max_updates_per_step == 2.0
    no_batch = {"policy": {"learn": {"update_per_collect": 3}, "collect": {"n_sample": 6}}}
    with pytest.raises(KeyError, match=r"policy\.learn\.batch_size.*--set policy\.learn\.batch_size="):
        UpdateSchedule.from_config(no_batch)


def test_complete_fills_missing_rules_and_refuses_a_conflict():
    from rlpipe.data import UpdateSchedule

    s = UpdateSchedule(min_samples=5)
    s.complete(per_iteration=4, batch_size=8)
    assert (s.per_iteration, s.batch_size) == (4, 8)
    s.complete(per_iteration=4, batch_size=8)  # the same values again: fine
    with pytest.raises(ValueError, match=r"MyLearner: .*per_iteration=4 .*update_per_collect is 2"):
        s.complete(per_iteration=2, batch_size=8, where="MyLearner")


def test_saved_counters_keep_the_old_layout():
    # buffer files written before UpdateSchedule hold exactly these keys; they must still load
    old = {"inserted": 40, "sampled": 7, "min_samples": 5, "max_updates_per_step": 0.5}
    s = SampleRatioController(min_samples=5, max_updates_per_step=0.5, per_iteration=100)
    assert set(s.state_dict()) == set(old)
    s.load_state_dict(old)
    assert s.allowed(40) == (13, s.allowed(40)[1]) and "ratio cap" in s.allowed(40)[1]


@pytest.mark.parametrize("kw", [{"per_iteration": 0}, {"batch_size": 0}, {"batch_size": 2.5}])
def test_bad_caps(kw):
    with pytest.raises(ValueError, match="UpdateSchedule: "):
        SampleRatioController(**kw)
