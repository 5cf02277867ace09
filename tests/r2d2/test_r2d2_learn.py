"""R2D2's update on hand-made sequences: burn-in without gradient, n-step rescaled targets,
masked padding, priorities."""
import math

import numpy as np
import pytest
import torch

from rlpipe.policies import R2D2Policy, get_policy
from rlpipe.policies._sequence_td import (sequence_nstep_targets, value_rescale,
                                          value_rescale_inv)

from .helpers import batch, grads, policy


def test_registered_and_recurrent():
    assert get_policy("r2d2") is R2D2Policy and R2D2Policy.recurrent
    pol = policy()
    state = pol.initial_state(3)
    assert set(state) == {"h", "c"} and state["h"].shape == (3, 6)
    out = pol.collect_mode.forward(np.zeros((3, 3), np.float32), state=state,
                                   first=np.array([True, False, True]), eps=0.0)
    assert out["action"].shape == (3,) and out["state"]["h"].shape == (3, 6)
    assert out["state"]["h"] is not state["h"]


def test_first_zeroes_the_state_before_acting():
    pol = policy()
    obs = np.full((2, 3), 0.5, np.float32)
    junk = {k: np.full_like(v, 3.0) for k, v in pol.initial_state(2).items()}
    a = pol.eval_mode.forward(obs, state=junk, first=np.array([True, True]))
    b = pol.eval_mode.forward(obs, state=pol.initial_state(2), first=np.array([False, False]))
    np.testing.assert_allclose(a["state"]["h"], b["state"]["h"])


def test_burn_in_is_unrolled_without_gradient_from_the_stored_state():
    burn = 3
    full = policy(burn_in=burn)
    data = batch(full, weight=False)
    # the state the online net reaches after the burn-in, from the stored state (no gradient)
    with torch.no_grad():
        x = torch.as_tensor(data["obs"][:, :burn])
        first = torch.as_tensor(data["first"][:, :burn])
        state = {k: torch.as_tensor(v) for k, v in data["state"].items()}
        _, warm = full.online(x, state, first)
    learn_only = {k: (v[:, burn:] if isinstance(v, np.ndarray) and v.ndim >= 2 else v)
                  for k, v in data.items() if k != "state"}
    learn_only.update(state={k: v.numpy() for k, v in warm.items()}, burn_in=0)
    cut = policy(burn_in=0, seq_len=8 - burn)  # same seed: same weights, target = online
    out_full = full.learn_mode.forward(data)
    out_cut = cut.learn_mode.forward(learn_only)
    assert out_full["loss"] == pytest.approx(out_cut["loss"], rel=1e-5)
    g_full, g_cut = grads(full), grads(cut)
    for name in g_full:  # every gradient comes from the learning part alone
        torch.testing.assert_close(g_full[name], g_cut[name], rtol=1e-4, atol=1e-6)
    # ...and the burn-in does matter for the loss (through the warmed-up state)
    cold = policy(burn_in=0, seq_len=8 - burn)
    cold_batch = dict(learn_only, state={k: np.zeros_like(v) for k, v in data["state"].items()})
    assert cold.learn_mode.forward(cold_batch)["loss"] != pytest.approx(out_cut["loss"], rel=1e-4)


def _hand_target(r, term, valid, v_next, gamma, n, eps):
    """y_t by the formula, one step at a time (valid = number of real steps)."""
    out = []
    for t in range(valid):
        m = min(n, valid - t)
        ret = sum(gamma ** i * r[t + i] for i in range(m))
        done = any(term[t + i] for i in range(m))
        h_inv = lambda x: math.copysign(
            (((math.sqrt(1 + 4 * eps * (abs(x) + 1 + eps)) - 1) / (2 * eps)) ** 2 - 1), x)
        h = lambda x: math.copysign(math.sqrt(abs(x) + 1) - 1, x) + eps * x
        out.append(h(ret + (0.0 if done else gamma ** m * h_inv(v_next[t + m]))))
    return out


def test_nstep_rescaled_target_matches_a_hand_computation():
    r = np.array([[1.0, -2.0, 0.5, 3.0, 0.0], [0.3, 0.2, -1.0, 4.0, 2.0]], np.float32)
    term = np.array([[0, 0, 0, 1, 0], [0, 0, 0, 0, 0]], bool)  # row 0 ends at t=3 (terminated)
    valid = [4, 5]                                             # row 1: full, bootstraps at t=5
    mask = np.arange(5)[None] < np.array(valid)[:, None]
    v_next = np.array([[0.0, 2.0, -1.0, 5.0, 7.0, 9.0], [0.0, 1.5, -3.0, 2.5, 0.7, 11.0]],
                      np.float32)
    got = sequence_nstep_targets(torch.as_tensor(r), torch.as_tensor(term), torch.as_tensor(mask),
                                 torch.as_tensor(v_next), 0.9, 3, 1e-3)
    for row in range(2):
        want = _hand_target(r[row], term[row], valid[row], v_next[row], 0.9, 3, 1e-3)
        np.testing.assert_allclose(got[row, :valid[row]].numpy(), want, rtol=1e-5, atol=1e-5)
    x = torch.linspace(-500, 500, 101)
    torch.testing.assert_close(value_rescale_inv(value_rescale(x)), x, rtol=1e-4, atol=1e-3)


def test_value_rescaling_can_be_turned_off():
    r = torch.tensor([[1.0, 2.0]])
    v = torch.tensor([[0.0, 0.0, 10.0]])
    plain = sequence_nstep_targets(r, torch.zeros(1, 2), torch.ones(1, 2), v, 0.5, 2, None)
    torch.testing.assert_close(plain, torch.tensor([[1.0 + 0.5 * 2.0 + 0.25 * 10.0,
                                                     2.0 + 0.5 * 10.0]]))


def test_masked_padding_contributes_nothing():
    data = batch(policy(), valid=[8, 5, 3, 6])
    garbage = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in data.items()}
    rng = np.random.default_rng(7)
    pad = ~data["mask"]
    garbage["obs"][pad] = rng.normal(size=(pad.sum(), 3)) * 50
    garbage["reward"][pad] = 1e3
    garbage["action"][pad] = 1 - garbage["action"][pad]
    for row, v in enumerate([8, 5, 3, 6]):  # next_obs after the last real step is padding too
        garbage["next_obs"][row, v:] = 99.0
    a, b = policy(), policy()
    out_a, out_b = a.learn_mode.forward(data), b.learn_mode.forward(garbage)
    assert out_a["loss"] == pytest.approx(out_b["loss"], rel=1e-6)
    for name, g in grads(a).items():
        torch.testing.assert_close(g, grads(b)[name])
    np.testing.assert_allclose(out_a["priority"], out_b["priority"], rtol=1e-6)
    assert out_a["priority"].shape == (4, 5)                # [B, seq_len]
    assert np.all(out_a["priority"][~data["mask"][:, 3:]] == 0)


def test_missing_sequence_keys_are_named():
    data = batch(policy())
    del data["state"]
    with pytest.raises(KeyError, match="state"):
        policy().learn_mode.forward(data)
    with pytest.raises(ValueError, match="burn_in"):
        policy().learn_mode.forward(dict(batch(policy()), burn_in=8))



def test_state_dict_restores_networks_optimizer_and_exploration_exactly():
    a = policy(burn_in=2, seq_len=4)
    a.learn_mode.forward(batch(a, length=6, seed=1))  # optimizer moments and a target to copy
    saved = a.state_dict()
    b = policy(burn_in=2, seq_len=4)  # its initial weights, a fresh optimizer and RNG
    b.load_state_dict(saved)
    assert b.train_iter == a.train_iter == 1
    next_batch = batch(a, length=6, seed=2)
    out_a, out_b = a.learn_mode.forward(next_batch), b.learn_mode.forward(next_batch)
    assert out_a["loss"] == out_b["loss"]
    for name in ("online", "target", "acting"):
        for (key, x), y in zip(getattr(a, name).state_dict().items(),
                               getattr(b, name).state_dict().values()):
            assert torch.equal(x, y), (name, key)
    obs, first = np.zeros((64, 3), np.float32), np.ones(64, bool)
    acts = [p.collect_mode.forward(obs, state=p.initial_state(64), first=first, eps=0.5)["action"]
            for p in (a, b)]
    np.testing.assert_array_equal(*acts)  # the same exploration draws
    with pytest.raises(KeyError, match=r"R2D2Policy.load_state_dict: the state lacks \['rng'\]"):
        b.load_state_dict({k: v for k, v in saved.items() if k != "rng"})
