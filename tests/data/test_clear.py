"""`clear()` on every buffer kind: afterwards it behaves as a new one (issue #20)."""
import numpy as np
import pytest

from rlpipe.data import (FrameReplayBuffer, NStepAccumulator, PrioritizedFrameReplayBuffer,
                         PrioritizedReplayBuffer, ReplayBuffer, RolloutStorage,
                         SequenceAdder, SequenceReplayBuffer, UpdateSchedule)
from rlpipe.data._prioritized import INITIAL_MAX_PRIORITY


def rows(values):
    values = np.asarray(values, dtype=np.float32)
    return {"obs": values[:, None], "action": values.astype(np.int64)}


@pytest.mark.parametrize("kind", [ReplayBuffer, PrioritizedReplayBuffer])
def test_cleared_replay_buffer_is_empty_and_samples_only_new_rows(kind):
    buf = kind(16, seed=0)
    buf.push(rows(np.arange(100, 112)))
    if kind is PrioritizedReplayBuffer:
        batch = buf.sample(8)
        buf.update_priority(batch["index"], np.full(8, 50.0))
        assert buf.max_priority > 50
    buf.clear()
    assert len(buf) == 0 and buf.position == 0
    with pytest.raises(RuntimeError, match="empty"):
        buf.sample(4)
    buf.push(rows([1, 2, 3]))
    assert len(buf) == 3
    batch = buf.sample(500)
    assert set(batch["obs"][:, 0].tolist()) == {1.0, 2.0, 3.0}  # never an old row
    assert batch["index"].max() < 3


def test_cleared_prioritized_buffer_forgets_its_tree_and_max_priority():
    buf = PrioritizedReplayBuffer(8, alpha=0.6, seed=1)
    buf.push(rows(np.arange(8)))
    buf.update_priority(np.arange(8), np.arange(8) * 10.0)
    buf.clear()
    assert buf.max_priority == INITIAL_MAX_PRIORITY == 1.0
    assert buf.priorities().size == 0
    buf.push(rows([5, 6]))
    # new rows get the initial max priority, so they are equally likely and weigh 1
    np.testing.assert_allclose(buf.priorities(), [INITIAL_MAX_PRIORITY ** 0.6] * 2)
    batch = buf.sample(64)
    np.testing.assert_allclose(batch["weight"], 1.0)
    assert 0.3 < np.mean(batch["index"] == 0) < 0.7
    # the state saved after a clear restores the same (empty tree + new rows)
    again = PrioritizedReplayBuffer(8, alpha=0.6)
    again.load_state_dict(buf.state_dict())
    np.testing.assert_allclose(again.priorities(), buf.priorities())


def step(n_envs, reward, done=False):
    obs = np.arange(n_envs, dtype=np.float32)[:, None]
    return {"obs": obs, "action": np.zeros(n_envs, np.int64), "reward": np.full(n_envs, reward, np.float32),
            "next_obs": obs + 1, "terminated": np.full(n_envs, done), "truncated": np.zeros(n_envs, bool)}


def test_cleared_nstep_accumulator_starts_fresh_windows():
    acc = NStepAccumulator(3, 0.5, 2)
    acc.push(step(2, 100.0))
    acc.push(step(2, 100.0))
    assert acc.pending == 4
    acc.clear()
    assert acc.pending == 0
    assert acc.push(step(2, 1.0)) is None
    out = acc.push(step(2, 1.0, done=True))
    # only the two windows started after clear(): rewards 1 + 0.5 and 1, no trace of 100
    assert sorted(out["reward"].tolist()) == [1.0, 1.0, 1.5, 1.5]
    assert acc.pending == 0


def test_cleared_rollout_storage_holds_no_step():
    store = RolloutStorage(2, 2)
    for _ in range(2):
        store.add({**step(2, 1.0), "value": np.zeros(2, np.float32)})
    store.compute(0.9, 0.9, value_fn=lambda o: np.zeros(len(o)))
    store.clear()
    assert len(store) == 0 and not store.full
    assert all(len(v) == 0 for v in store.data.values() if not isinstance(v, dict))
    with pytest.raises(RuntimeError, match="compute"):
        next(store.minibatches(2))
    with pytest.raises(RuntimeError, match="no steps"):
        store.compute(0.9, 0.9)
    store.add({**step(2, 7.0), "value": np.zeros(2, np.float32)})
    assert store.data["reward"].tolist() == [[7.0, 7.0]]


@pytest.mark.parametrize("prioritized", [False, True])
def test_cleared_sequence_buffer_samples_only_new_sequences(prioritized):
    def seqs(ids):
        ids = np.asarray(ids, np.float32)
        return {"obs": np.repeat(ids[:, None], 3, 1), "mask": np.ones((len(ids), 3), bool),
                "state": {"h": ids[:, None]}, "new_steps": np.full(len(ids), 3)}

    buf = SequenceReplayBuffer(8, seq_len=2, burn_in=1, prioritized=prioritized, seed=0,
                               controller=UpdateSchedule())
    buf.push(seqs(np.arange(100, 108)))
    if prioritized:
        batch = buf.sample(4)
        buf.update_priority(batch["index"], np.full((4, 3), 50.0), batch["mask"])
    buf.clear()
    assert len(buf) == 0
    with pytest.raises(RuntimeError, match="empty"):
        buf.sample(2)
    buf.push(seqs([1, 2]))
    batch = buf.sample(200)
    assert set(batch["obs"][:, 0].tolist()) == {1.0, 2.0} and set(batch["state"]["h"][:, 0]) == {1.0, 2.0}
    if prioritized:
        np.testing.assert_allclose(batch["weight"], 1.0)  # the old max priority is forgotten
    assert buf.controller.inserted == 30  # the counters stay


def test_cleared_sequence_adder_drops_its_open_windows():
    adder = SequenceAdder(seq_len=2, burn_in=1, stride=1, n_envs=2)
    rec = {"obs": np.zeros((2, 1)), "first": np.ones(2, bool), "terminated": np.zeros(2, bool),
           "truncated": np.zeros(2, bool), "state": {"h": np.zeros((2, 1))}}
    adder.add(rec)
    adder.add({**rec, "first": np.zeros(2, bool)})
    assert adder.pending == 4
    adder.clear()
    assert adder.pending == 0
    assert adder.add({**rec, "terminated": np.ones(2, bool)}) is None  # a 1-step episode: burn-in only


@pytest.mark.parametrize("kind", [FrameReplayBuffer, PrioritizedFrameReplayBuffer])
def test_cleared_frame_buffer_forgets_its_frames(kind):
    def stacks(values):  # each row's obs: its value repeated over 4 frames of [3, 3]
        obs = np.repeat(np.asarray(values, np.uint8)[:, None, None, None], 4, 1).repeat(3, 2).repeat(3, 3)
        return {"obs": obs, "next_obs": obs + 1, "action": np.asarray(values, np.int64)}

    buf = kind(16, frame_stack=4, seed=0)
    buf.push(stacks(np.arange(100, 112)))
    buf.clear()
    assert len(buf) == 0 and buf._storage.pool.live == 0
    with pytest.raises(RuntimeError, match="empty"):
        buf.sample(4)
    buf.push(stacks([1, 2, 3]))
    batch = buf.sample(200)
    assert set(batch["obs"][:, 0, 0, 0].tolist()) == {1, 2, 3}
    np.testing.assert_array_equal(batch["next_obs"], batch["obs"] + 1)
