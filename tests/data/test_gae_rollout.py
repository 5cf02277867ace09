import numpy as np
import pytest

from rlpipe.data import RolloutStorage, compute_gae


def reference_gae(r, v, nv, term, trunc, gamma, lam):
    T, N = r.shape
    adv = np.zeros((T, N))
    for e in range(N):
        running = 0.0
        for t in reversed(range(T)):
            if term[t, e] or trunc[t, e]:
                running = 0.0
            boot = 0.0 if term[t, e] else nv[t, e]
            delta = r[t, e] + gamma * boot - v[t, e]
            running = delta + gamma * lam * running
            adv[t, e] = running
    return adv, adv + v


@pytest.mark.parametrize("seed", range(3))
def test_gae_equals_reference_loop_on_random_data(seed):
    rng = np.random.default_rng(seed)
    T, N = 64, 5
    r, v, nv = rng.normal(size=(3, T, N))
    term = rng.random((T, N)) < 0.1
    trunc = (rng.random((T, N)) < 0.1) & ~term
    trunc[5, 0] = term[5, 0] = True  # both at once counts as terminated
    adv, ret = compute_gae(r, v, nv, term, trunc, 0.97, 0.9)
    ref_adv, ref_ret = reference_gae(r, v, nv, term, trunc, 0.97, 0.9)
    np.testing.assert_allclose(adv, ref_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ret, ref_ret, rtol=1e-5, atol=1e-5)
    # 1-d input and lam = 1 (discounted return minus value), lam = 0 (TD error)
    a1, _ = compute_gae(r[:, 0], v[:, 0], nv[:, 0], term[:, 0], trunc[:, 0], 0.97, 0.9)
    np.testing.assert_allclose(a1, adv[:, 0], rtol=1e-6)
    a0, _ = compute_gae(r, v, nv, term, trunc, 0.97, 0.0)
    np.testing.assert_allclose(a0, r + 0.97 * np.where(term, 0, nv) - v, rtol=1e-5, atol=1e-6)


def test_gae_shape_errors():
    with pytest.raises(ValueError, match="same shape"):
        compute_gae(np.zeros(3), np.zeros(3), np.zeros(4), np.zeros(3), np.zeros(3), 0.9, 0.9)


def fill(store, T, N, seed=0, extras=True):
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(T + 1, N, 2)).astype(np.float32)
    term = rng.random((T, N)) < 0.1
    trunc = (rng.random((T, N)) < 0.15) & ~term
    final = rng.normal(size=(T, N, 2)).astype(np.float32)  # true final obs of ended episodes
    next_obs = np.where((term | trunc)[..., None], final, obs[1:])
    V = lambda o: o.sum(-1).astype(np.float64)  # noqa: E731
    for t in range(T):
        step = {"obs": obs[t], "action": np.full(N, t), "reward": np.ones(N, np.float32),
                "terminated": term[t], "truncated": trunc[t], "value": V(obs[t]), "next_obs": next_obs[t]}
        if extras:
            step["logp"] = np.full(N, -t, np.float32)
        store.add(step)
    return obs, next_obs, term, trunc, V


def test_rollout_storage_bootstraps_from_true_final_obs():
    T, N = 16, 3
    store = RolloutStorage(T, N)
    obs, next_obs, term, trunc, V = fill(store, T, N)
    assert store.full and len(store) == T
    store.compute(0.99, 0.95, value_fn=V)
    adv, ret = compute_gae(np.ones((T, N)), V(obs[:-1]), V(next_obs), term, trunc, 0.99, 0.95)
    np.testing.assert_allclose(store.data["advantage"], adv, rtol=1e-5)
    np.testing.assert_allclose(store.data["return"], ret, rtol=1e-5)
    with pytest.raises(RuntimeError, match="full"):
        store.add({})


def test_rollout_storage_needs_value_fn_to_bootstrap():
    store = RolloutStorage(4, 2)
    fill(store, 4, 2)
    with pytest.raises(ValueError, match="value_fn"):
        store.compute(0.99, 0.95)
    with pytest.raises(RuntimeError, match="compute"):
        next(store.minibatches(4))


def test_minibatches_cover_every_valid_row_once():
    T, N = 8, 4
    store = RolloutStorage(T, N)
    fill(store, T, N)
    store.compute(0.9, 0.9, value_fn=lambda o: o.sum(-1))
    seen = []
    for mb in store.minibatches(10, rng=np.random.default_rng(0)):
        assert set(mb) == {"obs", "action", "reward", "terminated", "truncated", "value", "logp",
                           "advantage", "return"}
        assert len(mb["obs"]) <= 10 and mb["obs"].shape[1:] == (2,)
        np.testing.assert_array_equal(mb["logp"], -mb["action"])
        seen.extend(zip(mb["action"].tolist(), mb["value"].tolist()))
    assert len(seen) == T * N and len(set(seen)) == T * N
    order1 = [mb["action"].tolist() for mb in store.minibatches(8, rng=1)]
    order2 = [mb["action"].tolist() for mb in store.minibatches(8, rng=1)]
    assert order1 == order2
    store.clear()
    assert len(store) == 0 and not store.full


def test_invalid_rows_are_left_out_and_cut_the_recursion():
    store = RolloutStorage(3, 1)
    base = {"obs": np.zeros((1, 1)), "action": np.zeros(1), "reward": np.ones(1), "terminated": np.zeros(1, bool),
            "truncated": np.zeros(1, bool), "next_obs": np.zeros((1, 1))}
    for valid, value in ((True, 1.0), (False, 2.0), (True, 3.0)):
        store.add(dict(base, value=np.array([value]), valid=np.array([valid])))
    store.compute(1.0, 1.0, value_fn=lambda o: np.full(len(o), 10.0))
    adv = store.data["advantage"][:, 0]
    # row 0: delta = 1 + V(row 1 obs)=2 - 1 = 2, no recursion through the invalid row
    np.testing.assert_allclose(adv, [2.0, 0.0, 1 + 10 - 3])
    rows = [mb for mb in store.minibatches(10, rng=0)][0]
    assert sorted(rows["value"].tolist()) == [1.0, 3.0]


def test_next_value_key_replaces_value_fn_and_nested_obs_work():
    store = RolloutStorage(2, 2)
    for t in range(2):
        store.add({"obs": {"a": np.zeros((2, 3)), "b": {"c": np.ones((2, 1), np.uint8)}},
                   "action": np.zeros(2), "reward": np.ones(2), "terminated": np.zeros(2, bool),
                   "truncated": np.zeros(2, bool), "value": np.zeros(2), "next_value": np.full(2, 5.0)})
    store.compute(0.5, 1.0)
    np.testing.assert_allclose(store.data["advantage"], [[1 + 0.5 * 5 + 0.5 * 3.5] * 2, [3.5, 3.5]])
    mb = next(store.minibatches(4, rng=0))
    assert mb["obs"]["b"]["c"].shape == (4, 1) and mb["obs"]["b"]["c"].dtype == np.uint8


def steps_of(T, N, seed=0, with_value=True):
    """Per-step dicts as StepCollector leaves them in ctx.trajectories (obs nested)."""
    rng = np.random.default_rng(seed)
    steps = []
    for t in range(T):
        step = {"obs": {"x": rng.normal(size=(N, 2)).astype(np.float32)},
                "action": np.full(N, t), "reward": rng.normal(size=N).astype(np.float32),
                "next_obs": {"x": rng.normal(size=(N, 2)).astype(np.float32)},
                "terminated": rng.random(N) < 0.1, "truncated": rng.random(N) < 0.2,
                "valid": rng.random(N) < 0.9}
        if with_value:
            step["value"] = rng.normal(size=N).astype(np.float32)
        steps.append(step)
    return steps


def V_nested(obs):
    return obs["x"].sum(-1)


def test_from_steps_equals_adding_step_by_step_and_batch_is_step_major():
    T, N = 7, 3
    steps = steps_of(T, N)
    whole = RolloutStorage.from_steps(steps, reward_scale=0.5)
    assert whole.full and (whole.n_steps, whole.n_envs) == (T, N)
    added = RolloutStorage(T, N, reward_scale=0.5)
    for step in steps:
        added.add(step)
    for store in (whole, added):
        store.compute(0.9, 0.8, value_fn=V_nested)
    a, b = whole.batch(), added.batch()
    assert sorted(a) == ["action", "advantage", "obs", "return", "reward", "terminated",
                         "truncated", "value"]
    for key in ("advantage", "return", "reward", "value", "action"):
        np.testing.assert_array_equal(a[key], b[key])
    valid = np.stack([s["valid"] for s in steps]).reshape(-1)
    np.testing.assert_array_equal(a["action"], np.repeat(np.arange(T), N)[valid])  # row t·N + env
    np.testing.assert_array_equal(a["obs"]["x"], np.stack([s["obs"]["x"] for s in steps])
                                  .reshape(T * N, 2)[valid])
    np.testing.assert_array_equal(a["reward"], np.stack([s["reward"] for s in steps])
                                  .reshape(-1)[valid] * np.float32(0.5))
    assert a["reward"].dtype == a["advantage"].dtype == np.float32
    # the batch holds copies: the next rollout in the same storage leaves it alone
    before = a["advantage"].copy()
    whole.clear()
    for step in steps_of(T, N, seed=1):
        whole.add(step)
    whole.compute(0.9, 0.8, value_fn=V_nested)
    np.testing.assert_array_equal(a["advantage"], before)
    # minibatches hold the batch's rows, shuffled
    rows = sorted(r for mb in whole.minibatches(4, rng=0) for r in mb["advantage"].tolist())
    assert rows == sorted(whole.batch()["advantage"].tolist())


def test_the_estimate_is_compute_gae_on_float32_rewards_and_values():
    T, N = 6, 2
    steps = steps_of(T, N, seed=3)
    store = RolloutStorage.from_steps(steps)
    store.compute(0.99, 0.95, value_fn=V_nested)
    stack = lambda key: np.stack([s[key] for s in steps])  # noqa: E731
    term, trunc, valid = stack("terminated"), stack("truncated"), stack("valid")
    values = stack("value")
    next_values = np.zeros((T, N), np.float32)
    next_values[:-1] = values[1:]
    true_next = np.stack([V_nested(s["next_obs"]) for s in steps]).astype(np.float32)
    need = ~term & valid & trunc
    need[-1] = ~term[-1] & valid[-1]
    next_values[need] = true_next[need]
    adv, ret = compute_gae(stack("reward"), values, next_values, term, trunc, 0.99, 0.95,
                           valid=valid)
    np.testing.assert_array_equal(store.data["advantage"], adv)
    np.testing.assert_array_equal(store.data["return"], ret)


def test_values_come_from_value_fn_when_the_steps_carry_none():
    T, N = 4, 2
    steps = steps_of(T, N, with_value=False)
    calls = []

    def value_fn(obs):
        calls.append(len(obs["x"]))
        return V_nested(obs)

    store = RolloutStorage.from_steps(steps)
    store.compute(0.9, 0.9, value_fn=value_fn)
    assert calls[0] == T * N  # one call for V(obs) of every row, then one for next_obs rows
    expected = np.stack([V_nested(s["obs"]) for s in steps]).astype(np.float32)
    np.testing.assert_array_equal(store.data["value"], expected)
    store.clear()  # the computed values go with the rollout: the next one adds the same keys
    for step in steps_of(T, N, seed=5, with_value=False):
        store.add(step)
    assert "value" not in store.data
    with pytest.raises(ValueError, match="value_fn is needed.*observations"):
        store.compute(0.9, 0.9)


def test_from_steps_errors_name_the_problem():
    steps = steps_of(3, 2)
    del steps[1]["value"]
    with pytest.raises(KeyError, match="step 1 has keys.*same keys"):
        RolloutStorage.from_steps(steps)
    steps = steps_of(3, 2)
    steps[2]["action"] = np.zeros(3)
    with pytest.raises(ValueError, match="'action' does not have the same shape"):
        RolloutStorage.from_steps(steps)
    with pytest.raises(ValueError, match="no steps"):
        RolloutStorage.from_steps([])
    with pytest.raises(KeyError, match="lacks key 'reward'"):
        RolloutStorage.from_steps([{k: v for k, v in steps_of(1, 2)[0].items() if k != "reward"}])
    with pytest.raises(ValueError, match="reward_scale"):
        RolloutStorage(2, 2, reward_scale=0.0)
    store = RolloutStorage.from_steps(steps_of(2, 2))
    with pytest.raises(RuntimeError, match="compute"):
        store.batch()
    with pytest.raises(ValueError, match="one value per row"):
        store.compute(0.9, 0.9, value_fn=lambda obs: np.zeros(99))
    no_next = [{k: v for k, v in s.items() if k != "next_obs"} for s in steps_of(2, 2)]
    with pytest.raises(KeyError, match="lack 'next_obs'"):
        RolloutStorage.from_steps(no_next).compute(0.9, 0.9, value_fn=V_nested)
