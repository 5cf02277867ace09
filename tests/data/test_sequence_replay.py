"""SequenceReplayBuffer: layout of samples, R2D2's priority mix, frequencies, schedule, resume."""
import numpy as np
import pytest

from rlpipe.data import SequenceAdder, SequenceReplayBuffer, UpdateSchedule

CHI2_5DOF_999 = 20.515  # 99.9% quantile of chi-square with 5 degrees of freedom


def sequences(k, length=5, start=0):
    """k hand-made sequences of `length` steps; sequence i holds obs start+i at every step and
    the last step of the last one is padding."""
    ids = np.arange(start, start + k, dtype=np.float32)
    mask = np.ones((k, length), bool)
    mask[-1, -1] = False
    return {"obs": np.repeat(ids[:, None, None], length, 1), "action": np.zeros((k, length), np.int64),
            "reward": np.ones((k, length), np.float32), "first": np.zeros((k, length), bool),
            "mask": mask, "state": {"h": np.stack([ids, -ids], 1), "c": np.zeros((k, 3), np.float32)},
            "new_steps": np.full(k, 2, np.int64)}


def test_sample_returns_sequences_with_start_states_masks_and_burn_in():
    buf = SequenceReplayBuffer(8, seq_len=3, burn_in=2, seed=0)
    buf.push(sequences(6))
    batch = buf.sample(4)
    assert batch["obs"].shape == (4, 5, 1) and batch["mask"].shape == (4, 5)
    assert batch["state"]["h"].shape == (4, 2) and batch["state"]["c"].shape == (4, 3)
    assert batch["burn_in"] == 2 and "weight" not in batch and "new_steps" not in batch
    # each row's start state belongs to that row's sequence
    np.testing.assert_array_equal(batch["state"]["h"][:, 0], batch["obs"][:, 0, 0])
    np.testing.assert_array_equal(batch["index"], batch["obs"][:, 0, 0].astype(np.int64))
    assert len(buf) == 6
    buf.push(sequences(4, start=6))  # overwrites the two oldest
    assert len(buf) == 8 and set(buf.sample(200)["obs"][:, 0, 0].tolist()) == set(range(2, 10))


def test_priority_is_r2d2s_mix_of_max_and_mean_after_burn_in():
    buf = SequenceReplayBuffer(4, seq_len=3, burn_in=2, prioritized=True, alpha=1.0, eta=0.9, eps=1e-6)
    buf.push(sequences(3))
    td = np.array([[100.0, -100.0, 1.0, -3.0, 2.0],   # burn-in steps never count
                   [0.0, 0.0, -4.0, 0.5, 50.0],       # the masked last step does not count
                   [9.0, 9.0, 9.0, 9.0, 9.0]])
    mask = np.array([[True] * 5, [True] * 4 + [False], [True, True, False, False, False]])
    buf.update_priority(np.array([0, 1, 2]), td, mask)
    hand = [0.9 * 3.0 + 0.1 * (1.0 + 3.0 + 2.0) / 3,
            0.9 * 4.0 + 0.1 * (4.0 + 0.5) / 2,
            0.0]  # no valid step after burn-in: nothing to learn from it
    np.testing.assert_allclose(buf.priorities(), np.array(hand) + 1e-6)
    # the learning part alone ([B, seq_len]) gives the same; without a mask the stored one is used
    buf.update_priority(np.array([0, 1]), td[:2, 2:], mask[:2, 2:])
    np.testing.assert_allclose(buf.priorities()[:2], np.array(hand[:2]) + 1e-6)
    buf.update_priority(np.array([1]), td[1:2])  # stored mask: last step of sequence 2 only is padding
    np.testing.assert_allclose(buf.priorities()[1], 0.9 * 50 + 0.1 * (4.0 + 0.5 + 50) / 3 + 1e-6)
    with pytest.raises(ValueError, match=r"\[B, 5\]"):
        buf.update_priority(np.array([0]), np.zeros((1, 4)), np.ones((1, 4), bool))


def test_sampling_frequencies_follow_priorities():
    buf = SequenceReplayBuffer(6, seq_len=4, burn_in=1, prioritized=True, alpha=0.9, seed=3)
    buf.push(sequences(6))
    td = np.repeat(np.arange(1, 7, dtype=np.float64)[:, None], 5, 1)  # priority = i + 1
    buf.update_priority(np.arange(6), td, np.ones((6, 5), bool))
    counts = np.zeros(6)
    for _ in range(500):
        batch = buf.sample(32)
        counts += np.bincount(batch["index"], minlength=6)
    p = (np.arange(1, 7) + buf._buffer.eps) ** 0.9
    expected = counts.sum() * p / p.sum()
    assert ((counts - expected) ** 2 / expected).sum() < CHI2_5DOF_999
    # importance weights: (N P(i)) ** -beta over the largest one (the least likely row's)
    batch = buf.sample(64)
    np.testing.assert_allclose(batch["weight"], (p[0] / p[batch["index"]]) ** 0.6, rtol=1e-5)


def test_the_schedule_counts_env_steps_not_sequences():
    schedule = UpdateSchedule(min_samples=30, max_updates_per_step=0.25)
    buf = SequenceReplayBuffer(100, seq_len=4, burn_in=2, controller=schedule)
    adder = SequenceAdder(4, 2, stride=2, n_envs=2)
    rng = np.random.default_rng(0)
    steps = 0
    for t in range(60):
        done = rng.random(2) < 0.05
        rec = {"obs": rng.normal(size=(2, 3)).astype(np.float32), "first": np.full(2, t == 0),
               "terminated": done, "truncated": np.zeros(2, bool), "state": {"h": np.zeros((2, 4))}}
        out = adder.add(rec)
        if out is not None:
            steps += int(out["new_steps"].sum())
            buf.push(out)
    assert schedule.inserted == steps == 120 - adder.pending - adder.dropped_steps
    assert len(buf) < steps  # sequences are fewer than the steps they hold
    before = schedule.allowed_updates()
    buf.sample(2)
    assert schedule.sampled == 1 and schedule.allowed_updates() == before - 1
    # without new_steps a push counts its valid steps
    other = SequenceReplayBuffer(10, seq_len=4, burn_in=2, controller=UpdateSchedule())
    other.push({k: v for k, v in sequences(2, length=6).items() if k != "new_steps"})
    assert other.controller.inserted == 2 * 6 - 1


def test_save_and_load_resume_sampling_and_priorities_exactly(tmp_path):
    schedule = UpdateSchedule()
    buf = SequenceReplayBuffer(8, seq_len=3, burn_in=2, prioritized=True, seed=5, controller=schedule)
    buf.push(sequences(7))
    batch = buf.sample(4)
    buf.update_priority(batch["index"], np.abs(np.random.default_rng(1).normal(size=(4, 5))) * 3,
                        np.ones((4, 5), bool))
    buf.save(str(tmp_path / "seq.npz"))
    again = SequenceReplayBuffer(8, seq_len=3, burn_in=2, prioritized=True, controller=UpdateSchedule())
    again.load(str(tmp_path / "seq.npz"))
    np.testing.assert_array_equal(again.priorities(), buf.priorities())
    a, b = buf.sample(16), again.sample(16)
    for key in ("index", "weight", "mask"):
        np.testing.assert_array_equal(a[key], b[key])
    np.testing.assert_array_equal(a["state"]["h"], b["state"]["h"])
    assert again.controller.inserted == 14 and again.controller.sampled == 2
    with pytest.raises(ValueError, match="burn_in"):
        SequenceReplayBuffer(8, seq_len=3, burn_in=1, prioritized=True).load_state_dict(buf.state_dict())


def test_refusals_name_the_problem():
    buf = SequenceReplayBuffer(4, seq_len=3, burn_in=2)
    with pytest.raises(RuntimeError, match="prioritized=True"):
        buf.update_priority([0], np.zeros((1, 5)), np.ones((1, 5), bool))
    with pytest.raises(ValueError, match=r"\[k, 5\]"):
        buf.push(sequences(2, length=4))
    with pytest.raises(KeyError, match="'state'"):
        buf.push({k: v for k, v in sequences(2).items() if k != "state"})
    bad = sequences(2)
    bad["reward"] = np.ones((2, 4), np.float32)
    with pytest.raises(ValueError, match="'reward'"):
        buf.push(bad)
    with pytest.raises(ValueError, match="eta"):
        SequenceReplayBuffer(4, seq_len=3, burn_in=2, eta=1.5)
