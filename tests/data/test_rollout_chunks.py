"""RolloutStorage.sequence_minibatches: time-ordered chunks with start states and first flags."""
import numpy as np
import pytest
import torch

from rlpipe.data import RolloutStorage

T, N = 7, 2
ENDS = {(2, 0), (4, 1)}  # (t, env) where an episode terminates
INVALID = {(5, 0)}  # env 0 restarted at t = 5


def rollout():
    store = RolloutStorage(T, N)
    first = np.ones(N, bool)
    rng = np.random.default_rng(0)
    for t in range(T):
        obs = (t * 10 + np.arange(N)).astype(np.float32)
        valid = np.array([(t, e) not in INVALID for e in range(N)])
        term = np.array([(t, e) in ENDS for e in range(N)])
        state = np.where(first[:, None], 0.0, np.stack([obs, -obs], 1)).astype(np.float32)
        store.add({"obs": obs[:, None], "action": np.full(N, t), "reward": rng.normal(size=N),
                   "terminated": term, "truncated": np.zeros(N, bool), "next_obs": obs[:, None] + 1,
                   "value": rng.normal(size=N).astype(np.float32), "valid": valid, "first": first,
                   "state": {"h": state}})
        first = term | ~valid
    store.compute(0.9, 0.8, value_fn=lambda o: np.asarray(o)[:, 0] * 0.01)
    return store


def test_chunks_keep_time_order_start_states_first_flags_and_gae():
    store = rollout()
    data = store.data
    mbs = list(store.sequence_minibatches(chunk_len=3, n_minibatches=2, rng=0))
    assert [mb["obs"].shape[0] for mb in mbs] == [3, 3]  # 2 envs x 3 chunks (3, 3 and 1 step)
    seen = set()
    for mb in mbs:
        assert mb["obs"].shape == (3, 3, 1) and mb["state"]["h"].shape == (3, 2)
        for i in range(3):
            t0, env = int(mb["obs"][i, 0, 0]) // 10, int(mb["obs"][i, 0, 0]) % 10
            assert t0 % 3 == 0
            seen.add((t0, env))
            steps = np.arange(t0, min(t0 + 3, T))
            n = steps.size
            np.testing.assert_array_equal(mb["obs"][i, :n, 0], data["obs"][steps, env, 0])
            np.testing.assert_array_equal(mb["state"]["h"][i], data["state"]["h"][t0, env])
            np.testing.assert_array_equal(mb["first"][i, :n], data["first"][steps, env])
            np.testing.assert_array_equal(mb["advantage"][i, :n], data["advantage"][steps, env])
            np.testing.assert_array_equal(mb["return"][i, :n], data["return"][steps, env])
            expected_mask = [(t, env) not in INVALID for t in steps] + [False] * (3 - n)
            assert mb["mask"][i].tolist() == expected_mask
            assert not mb["first"][i, n:].any() and not mb["obs"][i, n:].any()  # padding is zeros
            for key in ("next_obs", "valid", "next_value"):
                assert key not in mb
    assert seen == {(t, e) for t in (0, 3, 6) for e in range(N)}  # every chunk exactly once
    # an episode starting inside a chunk is flagged there, and its state row is zeros
    chunk = next(mb for mb in mbs for i in range(3) if mb["obs"][i, 0, 0] == 30)
    row = [i for i in range(3) if chunk["obs"][i, 0, 0] == 30][0]
    assert chunk["first"][row].tolist() == [True, False, False]  # env 0 ended at t = 2
    assert chunk["state"]["h"][row].tolist() == [0.0, 0.0]


def test_gae_is_the_same_as_for_flat_minibatches_and_the_split_is_seeded():
    store = rollout()
    flat = store.batch()
    chunks = next(store.sequence_minibatches(chunk_len=T, n_minibatches=1, rng=1))
    valid = chunks["mask"]
    order = np.argsort(chunks["obs"][:, 0, 0])  # env 0, env 1
    adv = chunks["advantage"][order].T[valid[order].T]  # step-major like batch()
    np.testing.assert_array_equal(adv, flat["advantage"])
    a = [mb["obs"][:, 0, 0].tolist() for mb in store.sequence_minibatches(2, 3, rng=7)]
    b = [mb["obs"][:, 0, 0].tolist() for mb in store.sequence_minibatches(2, 3, rng=7)]
    assert a == b and sorted(sum(a, [])) == sorted(t * 10 + e for t in (0, 2, 4, 6) for e in range(N))


def test_chunks_converted_once_give_the_same_minibatches():
    """sequence_chunks: every chunk env-major; minibatches cut from them converted to tensors
    are those of the arrays, with the same draws."""
    store = rollout()
    chunks = store.sequence_chunks(3)
    assert chunks["obs"].shape == (6, 3, 1) and chunks["state"]["h"].shape == (6, 2)
    assert chunks["obs"][:, 0, 0].tolist() == [0, 30, 60, 1, 31, 61]
    tensors = {k: {kk: torch.as_tensor(vv) for kk, vv in v.items()} if isinstance(v, dict)
               else torch.as_tensor(v) for k, v in chunks.items()}
    pairs = list(zip(store.sequence_minibatches(3, 2, rng=5),
                     store.sequence_minibatches(3, 2, rng=5, chunks=tensors)))
    assert len(pairs) == 2
    for arrays, cut in pairs:
        assert arrays.keys() == cut.keys() and isinstance(cut["obs"], torch.Tensor)
        np.testing.assert_array_equal(cut["obs"].numpy(), arrays["obs"])
        np.testing.assert_array_equal(cut["state"]["h"].numpy(), arrays["state"]["h"])
        for key in ("first", "mask", "advantage", "action"):
            np.testing.assert_array_equal(cut[key].numpy(), arrays[key])
    with pytest.raises(ValueError, match="sequence_chunks: chunk_len"):
        store.sequence_chunks(0)
    with pytest.raises(KeyError, match="no 'mask'"):
        store.sequence_minibatches(3, 2, chunks={"obs": tensors["obs"]})


def test_refusals_name_the_problem():
    store = rollout()
    with pytest.raises(ValueError, match=r"\[1, 6\]"):
        next(store.sequence_minibatches(3, 7))
    with pytest.raises(ValueError, match="chunk_len"):
        next(store.sequence_minibatches(0, 1))
    plain = RolloutStorage(2, 1)
    for _ in range(2):
        plain.add({"obs": np.zeros((1, 1)), "reward": np.zeros(1), "terminated": np.zeros(1, bool),
                   "truncated": np.zeros(1, bool), "value": np.zeros(1), "next_value": np.zeros(1)})
    with pytest.raises(RuntimeError, match="compute"):
        next(plain.sequence_minibatches(1, 1))
    plain.compute(0.9, 0.9)
    with pytest.raises(KeyError, match="'first'"):
        next(plain.sequence_minibatches(1, 1))
