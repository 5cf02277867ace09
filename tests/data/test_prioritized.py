import numpy as np
import pytest

from rlpipe.data import PrioritizedReplayBuffer, SampleRatioController, SumTree

# 99.9% quantile of the chi-square distribution with 9 degrees of freedom
CHI2_9DOF_999 = 27.877


def filled(capacity, n, **kw):
    buf = PrioritizedReplayBuffer(capacity, **kw)
    buf.push({"obs": np.arange(n, dtype=np.float32)[:, None], "action": np.arange(n)})
    return buf


def test_sum_tree_sums_finds_and_keeps_last_duplicate():
    tree = SumTree(5)
    tree.update(np.arange(5), np.array([1.0, 0.0, 2.0, 3.0, 4.0]))
    assert tree.total == 10.0 and tree.min == 0.0
    # cumulative ranges: [0,1) -> 0, leaf 1 empty, [1,3) -> 2, [3,6) -> 3, [6,10) -> 4
    found = tree.find(np.array([0.0, 0.99, 1.0, 2.99, 3.0, 5.99, 6.0, 9.999]))
    assert found.tolist() == [0, 0, 2, 2, 3, 3, 4, 4]
    tree.update(np.array([4, 4]), np.array([7.0, 1.0]))
    assert tree.get(np.array([4]))[0] == 1.0 and tree.total == 7.0
    # masses at or past the edge never land on an empty leaf
    assert tree.find(np.array([7.0, 1e9])).tolist() == [4, 4]
    assert SumTree(1).find(np.array([0.0])).tolist() == [0]


def test_sum_tree_matches_cumsum_search_on_random_data():
    rng = np.random.default_rng(0)
    tree = SumTree(1000)
    p = rng.random(1000) * (rng.random(1000) > 0.2)
    tree.update(np.arange(1000), p)
    mass = rng.random(5000) * p.sum()
    expected = np.searchsorted(np.cumsum(p), mass, side="right")
    np.testing.assert_array_equal(tree.find(mass), expected)
    assert np.isclose(tree.total, p.sum())


def test_sum_tree_stays_exact_under_many_updates_and_tracks_the_min():
    rng = np.random.default_rng(1)
    tree = SumTree(300)
    leaves = np.full(300, np.inf)
    for step in range(500):
        idx = rng.integers(0, 300, size=int(rng.integers(1, 64)))
        val = rng.random(idx.size) + 1e-3
        if step % 50 == 0:  # ties and zeros too
            val[:] = 0.5 if step % 100 else 0.0
        tree.update(idx, val)
        for i, v in zip(idx, val):  # the last write wins
            leaves[i] = v
        held = np.where(np.isinf(leaves), 0.0, leaves)
        assert tree.total == pytest.approx(held.sum(), rel=1e-12)
        assert tree.min == leaves.min()
        np.testing.assert_array_equal(tree.get(np.arange(300)), held)
    mass = rng.random(2000) * tree.total
    found = tree.find(mass)
    assert (tree.get(found) > 0).all()
    np.testing.assert_array_equal(found, np.searchsorted(np.cumsum(held), mass, side="right"))


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_sampling_frequencies_are_proportional_to_priority(alpha):
    buf = filled(10, 10, alpha=alpha, seed=123)
    priority = np.arange(1, 11, dtype=np.float64)
    buf.update_priority(np.arange(10), priority)
    counts = np.zeros(10)
    for _ in range(1000):
        counts += np.bincount(buf.sample(32)["index"], minlength=10)
    p = (priority + buf.eps) ** alpha
    expected = counts.sum() * p / p.sum()
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < CHI2_9DOF_999, (chi2, counts, expected)
    # and a wrong hypothesis (uniform) is clearly rejected
    uniform = np.full(10, counts.sum() / 10)
    assert ((counts - uniform) ** 2 / uniform).sum() > 10 * CHI2_9DOF_999


def test_importance_weights_on_a_small_case():
    buf = filled(4, 4, alpha=1.0, beta=0.5, eps=1e-9, seed=0)
    buf.update_priority(np.arange(4), [1.0, 2.0, 3.0, 4.0])
    batch = buf.sample(400)
    # P(i) = p_i / 10, N = 4: w_i = (4 P_i) ** -0.5 / max_j (4 P_j) ** -0.5 = p_i ** -0.5
    expected = np.array([1.0, 2 ** -0.5, 3 ** -0.5, 0.5], dtype=np.float32)
    assert batch["weight"].dtype == np.float32
    np.testing.assert_allclose(batch["weight"], expected[batch["index"]], rtol=1e-6)
    np.testing.assert_array_equal(batch["action"], batch["index"])
    buf.beta = 1.0
    np.testing.assert_allclose(buf.sample(10)["weight"].max() <= 1.0, True)


def test_new_rows_get_the_max_priority_seen():
    buf = filled(8, 4, alpha=1.0, eps=1e-9)
    np.testing.assert_allclose(buf.priorities(), 1.0)
    buf.update_priority([0, 1], [5.0, 0.5])
    assert buf.max_priority == pytest.approx(5.0)
    buf.push({"obs": np.zeros((2, 1), np.float32), "action": np.zeros(2, np.int64)})
    np.testing.assert_allclose(buf.priorities(), [5.0, 0.5, 1.0, 1.0, 5.0, 5.0], rtol=1e-6)


def test_push_larger_than_capacity_sets_every_priority():
    buf = filled(4, 11, alpha=1.0, eps=1e-9, seed=0)
    assert len(buf) == 4 and buf.position == 3
    np.testing.assert_allclose(buf.priorities(), 1.0)
    assert buf.sample(8)["weight"].tolist() == [1.0] * 8


def test_update_for_a_row_overwritten_since_it_was_sampled_is_dropped():
    buf = filled(4, 4, alpha=1.0, eps=1e-9, seed=0)
    batch = buf.sample(64)
    buf.push({"obs": np.zeros((1, 1), np.float32), "action": np.zeros(1, np.int64)})  # overwrites row 0
    buf.update_priority(batch["index"], np.full(64, 0.1))
    p = buf.priorities()
    assert p[0] == pytest.approx(1.0)  # the fresh row keeps max priority
    sampled = set(batch["index"].tolist()) - {0}
    assert sampled and all(p[i] == pytest.approx(0.1) for i in sampled)


def test_update_priority_errors():
    buf = filled(4, 2)
    with pytest.raises(ValueError, match="one priority per sampled row"):
        buf.update_priority([0, 1], [1.0])
    with pytest.raises(ValueError, match="finite"):
        buf.update_priority([0], [np.nan])
    with pytest.raises(ValueError, match=">= 0"):
        buf.update_priority([0], [-1.0])
    with pytest.raises(IndexError, match="out of range"):
        buf.update_priority([3], [1.0])
    with pytest.raises(ValueError, match="eps must be > 0"):
        PrioritizedReplayBuffer(4, eps=0.0)
    with pytest.raises(RuntimeError, match="empty"):
        PrioritizedReplayBuffer(4).sample(1)


def test_save_load_keeps_priorities_and_samples(tmp_path):
    ctrl = SampleRatioController()
    buf = filled(6, 9, alpha=0.7, seed=5, controller=ctrl)
    buf.update_priority(np.arange(6), np.linspace(0.1, 3, 6))
    buf.sample(3)
    path = str(tmp_path / "per.npz")
    buf.save(path)
    other = PrioritizedReplayBuffer(6, alpha=0.7, seed=0, controller=SampleRatioController())
    other.load(path)
    np.testing.assert_allclose(other.priorities(), buf.priorities())
    assert other.position == buf.position == 3 and other.max_priority == buf.max_priority
    a, b = buf.sample(20), other.sample(20)
    for key in ("index", "weight", "obs"):
        np.testing.assert_array_equal(a[key], b[key])
    assert other.controller.sampled == 2
    with pytest.raises(ValueError, match="alpha"):
        PrioritizedReplayBuffer(6, alpha=0.5).load(path)
    from rlpipe.data import ReplayBuffer

    with pytest.raises(ValueError, match="PrioritizedReplayBuffer"):
        ReplayBuffer(6).load(path)
