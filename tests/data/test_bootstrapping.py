"""Terminated vs truncated on a TimeLimit-like trajectory, targets computed by hand.

Two episodes, gamma = 0.5, reward 1 every step, V(s_k) = k + 1 for states s0..s6:

    t  obs  next_obs  ends
    0  s0   s1
    1  s1   s2
    2  s2   s3        truncated (time limit): s3 is the true final obs
    3  s4   s5        (s4: first obs of episode 2)
    4  s5   s6        terminated

A wrong implementation would bootstrap step 2 from s4 (the next episode) or not at all.
"""
import numpy as np
import pytest

from rlpipe.data import NStepAccumulator, RolloutStorage, compute_gae, nstep_targets, td_targets

GAMMA = 0.5
OBS = np.array([0, 1, 2, 4, 5], dtype=np.float32)
NEXT_OBS = np.array([1, 2, 3, 5, 6], dtype=np.float32)
REWARD = np.ones(5, dtype=np.float32)
TERM = np.array([0, 0, 0, 0, 1], dtype=bool)
TRUNC = np.array([0, 0, 1, 0, 0], dtype=bool)


def V(s):
    return np.asarray(s, dtype=np.float64) + 1.0


def test_one_step_targets():
    # 1 + .5*V(s1), 1 + .5*V(s2), 1 + .5*V(s3) (not V(s4)), 1 + .5*V(s5), 1 (terminated)
    np.testing.assert_allclose(td_targets(REWARD, V(NEXT_OBS), TERM, GAMMA), [2.0, 2.5, 3.0, 4.0, 1.0])


def test_two_step_targets_reference_and_accumulator():
    expected_return = [1.5, 1.5, 1.0, 1.5, 1.0]
    expected_discount = [0.25, 0.25, 0.5, 0.0, 0.0]
    expected_next = [2, 3, 3, 6, 6]
    # with V: t0: 1.5 + .25*V(s2)=2.25; t1: 1.5 + .25*V(s3)=2.5; t2: 1 + .5*V(s3)=3; t3: 1.5; t4: 1
    ret, disc, boot = nstep_targets(REWARD, TERM, TRUNC, n=2, gamma=GAMMA)
    np.testing.assert_allclose(ret, expected_return)
    np.testing.assert_allclose(disc, expected_discount)
    np.testing.assert_array_equal(NEXT_OBS[boot], expected_next)
    np.testing.assert_allclose(ret + disc * V(NEXT_OBS[boot]), [2.25, 2.5, 3.0, 1.5, 1.0])

    acc = NStepAccumulator(n=2, gamma=GAMMA, n_envs=1)
    out = []
    for t in range(5):
        done = acc.push({"obs": OBS[t:t + 1, None], "action": np.array([t]), "reward": REWARD[t:t + 1],
                         "next_obs": NEXT_OBS[t:t + 1, None], "terminated": TERM[t:t + 1],
                         "truncated": TRUNC[t:t + 1]})
        if done is not None:
            out.append(done)
    got = {k: np.concatenate([o[k] for o in out]) for k in out[0]}
    np.testing.assert_array_equal(got["action"], [0, 1, 2, 3, 4])
    np.testing.assert_allclose(got["reward"], expected_return)
    np.testing.assert_allclose(got["discount"], expected_discount)
    np.testing.assert_array_equal(got["next_obs"][:, 0], expected_next)
    np.testing.assert_array_equal(got["terminated"], [0, 0, 0, 1, 1])
    np.testing.assert_array_equal(got["truncated"], [0, 1, 1, 0, 0])
    assert acc.pending == 0


def test_gae_targets():
    lam = 0.5
    # deltas: 1+.5*2-1=1, 1+.5*3-2=.5, 1+.5*4-3=0 (bootstrap V(s3)), 1+.5*6-5=-1, 1-6=-5
    # A4=-5, A3=-1+.25*A4=-2.25, A2=0 (episode end cuts), A1=.5+.25*0=.5, A0=1+.25*.5=1.125
    expected_adv = [1.125, 0.5, 0.0, -2.25, -5.0]
    adv, ret = compute_gae(REWARD, V(OBS), V(NEXT_OBS), TERM, TRUNC, GAMMA, lam)
    np.testing.assert_allclose(adv, expected_adv)
    np.testing.assert_allclose(ret, np.array(expected_adv) + V(OBS))

    # RolloutStorage gets V(s3) from value_fn: the next row's value would be V(s4)
    store = RolloutStorage(n_steps=5, n_envs=1)
    for t in range(5):
        store.add({"obs": OBS[t:t + 1, None], "action": np.array([0]), "reward": REWARD[t:t + 1],
                   "next_obs": NEXT_OBS[t:t + 1, None], "terminated": TERM[t:t + 1],
                   "truncated": TRUNC[t:t + 1], "value": V(OBS[t:t + 1])})
    calls = []

    def value_fn(obs):
        calls.append(obs.copy())
        return V(obs[:, 0])

    store.compute(GAMMA, lam, value_fn=value_fn)
    np.testing.assert_allclose(store.data["advantage"][:, 0], expected_adv)
    assert len(calls) == 1 and calls[0][:, 0].tolist() == [3.0]  # only the truncated step's final obs


@pytest.mark.parametrize("gamma", [0.0, 1.0])
def test_extreme_discounts(gamma):
    ret, disc, _ = nstep_targets(REWARD, TERM, TRUNC, n=3, gamma=gamma)
    if gamma == 0.0:
        np.testing.assert_allclose(ret, 1.0)
        np.testing.assert_allclose(disc, 0.0)
    else:
        np.testing.assert_allclose(ret, [3, 2, 1, 2, 1])
        np.testing.assert_allclose(disc, [1, 1, 1, 0, 0])
