import numpy as np
import pytest

from rlpipe.data import NStepAccumulator, nstep_targets


def random_stream(n_envs, T, seed, p_invalid=0.0):
    """Vector steps whose obs ids are unique: obs id = 1000 * t + env; a final obs is -id."""
    rng = np.random.default_rng(seed)
    term = rng.random((T, n_envs)) < 0.08
    trunc = (rng.random((T, n_envs)) < 0.08) & ~term
    valid = rng.random((T, n_envs)) >= p_invalid
    reward = rng.normal(size=(T, n_envs)).astype(np.float32)
    ids = 1000.0 * np.arange(T)[:, None] + np.arange(n_envs)[None, :]
    done = term | trunc
    # next obs: the next row's obs while the episode goes on, else a distinct "true final" obs
    next_ids = np.where(done, -ids - 1, np.vstack([ids[1:], -ids[-1:] - 1]))
    steps = []
    for t in range(T):
        steps.append({"obs": {"id": ids[t].copy(), "pair": np.stack([ids[t], ids[t]], 1)},
                      "action": (10 * ids[t]).astype(np.int64), "logp": -ids[t],
                      "reward": reward[t], "next_obs": {"id": next_ids[t], "pair": np.stack([next_ids[t]] * 2, 1)},
                      "terminated": term[t], "truncated": trunc[t], "valid": valid[t]})
    return steps, dict(ids=ids, next_ids=next_ids, reward=reward, term=term, trunc=trunc, valid=valid)


def run(acc, steps):
    out = [o for o in (acc.push(s) for s in steps) if o is not None]
    return {k: (np.concatenate([o[k] for o in out]) if k != "obs" and k != "next_obs"
                else {kk: np.concatenate([o[k][kk] for o in out]) for kk in out[0][k]})
            for k in out[0]}


@pytest.mark.parametrize("n", [1, 3, 5])
def test_accumulator_matches_reference_per_env(n):
    gamma, n_envs, T = 0.9, 4, 80
    steps, s = random_stream(n_envs, T, seed=n)
    got = run(NStepAccumulator(n, gamma, n_envs), steps)
    by_id = {float(i): k for k, i in enumerate(got["obs"]["id"])}
    assert len(by_id) == len(got["obs"]["id"])  # every window emitted once
    emitted = 0
    for e in range(n_envs):
        ret, disc, boot = nstep_targets(s["reward"][:, e], s["term"][:, e], s["trunc"][:, e], n, gamma)
        for t in range(T):
            k = by_id.get(float(s["ids"][t, e]))
            ends_inside = s["term"][t:boot[t] + 1, e].any() or s["trunc"][t:boot[t] + 1, e].any()
            complete = ends_inside or boot[t] - t + 1 == n
            if not complete:  # the window is still open at the end of the stream
                assert k is None
                continue
            assert k is not None, (e, t)
            emitted += 1
            assert got["reward"][k] == pytest.approx(ret[t], rel=1e-5, abs=1e-5)
            assert got["discount"][k] == pytest.approx(disc[t], rel=1e-6)
            assert got["next_obs"]["id"][k] == s["next_ids"][boot[t], e]
            np.testing.assert_array_equal(got["next_obs"]["pair"][k], [s["next_ids"][boot[t], e]] * 2)
            assert got["action"][k] == 10 * s["ids"][t, e] and got["logp"][k] == -s["ids"][t, e]
            assert got["terminated"][k] == s["term"][boot[t], e]
            assert got["truncated"][k] == (s["trunc"][boot[t], e] and not s["term"][boot[t], e])
    assert emitted == len(got["reward"])
    assert got["reward"].dtype == np.float32 and got["discount"].dtype == np.float32


def test_invalid_rows_flush_pending_windows_as_truncated():
    gamma, n, n_envs, T = 0.8, 4, 3, 120
    steps, s = random_stream(n_envs, T, seed=7, p_invalid=0.05)
    acc = NStepAccumulator(n, gamma, n_envs)
    got = run(acc, steps)
    by_id = {float(i): k for k, i in enumerate(got["obs"]["id"])}
    for e in range(n_envs):
        keep = np.flatnonzero(s["valid"][:, e])
        # reference: drop invalid rows; the step before an invalid row becomes an episode cut
        # that bootstraps from the invalid row's obs (the last real observation)
        trunc = s["trunc"][:, e].copy()
        nxt = s["next_ids"][:, e].copy()
        for t in np.flatnonzero(~s["valid"][:, e]):
            if t > 0 and s["valid"][t - 1, e] and not (s["term"][t - 1, e] or s["trunc"][t - 1, e]):
                trunc[t - 1] = True
                nxt[t - 1] = s["ids"][t, e]
        ret, disc, boot = nstep_targets(s["reward"][keep, e], s["term"][keep, e], trunc[keep], n, gamma)
        for j, t in enumerate(keep):
            k = by_id.get(float(s["ids"][t, e]))
            if k is None:
                continue
            assert got["reward"][k] == pytest.approx(ret[j], abs=1e-5)
            assert got["discount"][k] == pytest.approx(disc[j])
            assert got["next_obs"]["id"][k] == nxt[keep[boot[j]]]
    assert not any(float(i) in by_id for i in s["ids"][~s["valid"]])  # invalid rows never start a window
    assert len(by_id) + acc.pending == s["valid"].sum()


def test_push_returns_none_until_a_window_completes_and_checks_keys():
    acc = NStepAccumulator(3, 0.9, 2)
    step = {"obs": np.zeros((2, 1)), "action": np.zeros(2, np.int64), "reward": np.ones(2),
            "next_obs": np.zeros((2, 1)), "terminated": np.zeros(2, bool), "truncated": np.zeros(2, bool)}
    assert acc.push(step) is None and acc.push(step) is None
    out = acc.push(step)
    assert out["reward"].tolist() == pytest.approx([2.71, 2.71])
    assert acc.pending == 4
    with pytest.raises(KeyError, match="'logp'"):
        acc.push(dict(step, logp=np.zeros(2)))
    with pytest.raises(ValueError, match="n_envs=2"):
        acc.push(dict(step, reward=np.ones(3)))
    with pytest.raises(KeyError, match="next_obs"):
        acc.push({k: v for k, v in step.items() if k != "next_obs"})
    acc.clear()
    assert acc.pending == 0
    with pytest.raises(ValueError, match="n must be"):
        NStepAccumulator(0, 0.9, 1)
