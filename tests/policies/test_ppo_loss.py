"""ppo_terms, the clipped-objective loss of PPO, LSTM-PPO and MAPPO: masked rows, the
advantage normalisation (also a whole epoch's at once), the distribution-free form and the
statistics of a whole epoch."""
from __future__ import annotations

import pytest
import torch
from easydict import EasyDict
from torch.distributions import Categorical

from rlpipe.models.distributions import categorical_entropy, categorical_log_prob
from rlpipe.policies._ppo_loss import clipped_terms, normalise_adv, ppo_terms, ratio_stats

CFG = EasyDict(clip_ratio=0.2, adv_norm=True, value_clip=0.2, value_coef=0.5, entropy_coef=0.01)


class _Dist:
    """A stand-in distribution: log π(a) is the given tensor, the entropy a fixed one."""

    def __init__(self, log_prob: torch.Tensor, entropy: torch.Tensor) -> None:
        self._log_prob, self._entropy = log_prob, entropy

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        return self._log_prob

    def entropy(self) -> torch.Tensor:
        return self._entropy


def _rows(n: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return {k: torch.randn(n, generator=g) for k in ("log_prob", "entropy", "value", "logp", "adv",
                                                    "ret", "old")}


def _terms(r, mask=None, **kw):
    log_prob = r["log_prob"].clone().requires_grad_(True)
    value = r["value"].clone().requires_grad_(True)
    terms = ppo_terms(CFG, _Dist(log_prob, r["entropy"]), value, torch.zeros(len(value)), r["logp"],
                      r["adv"], r["ret"], r["old"], mask=mask, **kw)
    terms.loss.backward()
    return terms, log_prob.grad, value.grad


@pytest.mark.parametrize("unbiased", [True, False])
@pytest.mark.parametrize("present", [[1, 1, 0, 1, 0, 1], [0, 0, 1, 0, 0, 0]])
def test_a_masked_row_reaches_neither_loss_nor_gradient_even_where_its_ratio_overflows(
        unbiased, present):
    # one present row: its advantage is left as it is, as for a one-row batch without a mask
    r = _rows(6)
    mask = torch.tensor(present, dtype=torch.bool)
    r["logp"][~mask] = -500.0  # exp(log π − logp) is inf in float32 for these rows
    kept = {k: v[mask] for k, v in r.items()}
    masked, lp_grad, v_grad = _terms(r, mask, unbiased_adv_std=unbiased)
    alone, lp_alone, v_alone = _terms(kept, unbiased_adv_std=unbiased)
    for name in ("loss", "policy_loss", "value_loss", "entropy", "approx_kl", "clip_frac"):
        torch.testing.assert_close(getattr(masked, name), getattr(alone, name))
    assert torch.isfinite(lp_grad).all() and torch.isfinite(v_grad).all()
    assert (lp_grad[~mask] == 0).all() and (v_grad[~mask] == 0).all()
    torch.testing.assert_close(lp_grad[mask], lp_alone)
    torch.testing.assert_close(v_grad[mask], v_alone)


def test_advantages_are_normalised_by_the_sample_or_the_population_std():
    n = 8
    r = _rows(n, seed=1)
    r["logp"] = r["log_prob"].clone()  # ratio 1: ∂L_clip/∂log π = −A_norm / n
    for unbiased in (True, False):
        _, grad, _ = _terms(r, unbiased_adv_std=unbiased)
        a_norm = -n * grad  # the entropy and value terms do not depend on log π here
        torch.testing.assert_close(a_norm.mean(), torch.tensor(0.0), atol=1e-5, rtol=0)
        torch.testing.assert_close(a_norm.std(unbiased=unbiased), torch.tensor(1.0), atol=1e-5, rtol=0)
        assert abs(a_norm.std(unbiased=not unbiased) - 1.0) > 0.03


def test_log_softmax_log_probs_give_the_categorical_loss_and_gradient():
    """PPO's Categorical path (log_softmax of the logits, gather, no distribution object) gives
    ppo_terms' loss, statistics and logit gradient with torch's Categorical, to float rounding."""
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(32, 5, generator=g)
    action = torch.randint(0, 5, (32,), generator=g)
    r = _rows(32, seed=2)
    a = logits.clone().requires_grad_(True)
    ref = ppo_terms(CFG, Categorical(logits=a), r["value"], action, r["logp"], r["adv"], r["ret"],
                    r["old"])
    ref.loss.backward()
    b = logits.clone().requires_grad_(True)
    log_pi = torch.log_softmax(b, -1)
    lean = clipped_terms(CFG, categorical_log_prob(log_pi, action), categorical_entropy(log_pi),
                         r["value"], r["logp"], r["adv"], r["ret"], r["old"])
    lean.loss.backward()
    for name in ("loss", "policy_loss", "value_loss", "entropy", "approx_kl", "clip_frac"):
        torch.testing.assert_close(getattr(lean, name), getattr(ref, name))
    torch.testing.assert_close(b.grad, a.grad)


def test_without_an_entropy_the_loss_and_gradient_are_those_of_a_zero_entropy_weight():
    r = _rows(16, seed=3)
    cfg = EasyDict(CFG, entropy_coef=0.0)
    grads = []
    for entropy in (r["entropy"], None):
        log_prob = r["log_prob"].clone().requires_grad_(True)
        terms = clipped_terms(cfg, log_prob, entropy, r["value"], r["logp"], r["adv"], r["ret"],
                              r["old"])
        terms.loss.backward()
        grads.append((terms.loss, log_prob.grad))
    assert torch.equal(grads[0][0], grads[1][0]) and torch.equal(grads[0][1], grads[1][1])
    with pytest.raises(ValueError, match="entropy_coef=0.01"):
        clipped_terms(CFG, r["log_prob"], None, r["value"], r["logp"], r["adv"], r["ret"], r["old"])


def test_ratio_stats_of_stacked_minibatches_are_each_minibatch_s_own():
    """The epoch's approx-KL and clip fraction computed once from the stacked log-ratios [k,
    rows] equal those ppo_terms computes minibatch by minibatch."""
    per_minibatch = [_terms(_rows(8, seed=s))[0] for s in range(4)]
    stacked = torch.stack([t.log_ratio for t in per_minibatch])
    kl, clip = ratio_stats(stacked, CFG.clip_ratio, dim=1)
    torch.testing.assert_close(kl, torch.stack([t.approx_kl for t in per_minibatch]))
    torch.testing.assert_close(clip, torch.stack([t.clip_frac for t in per_minibatch]))
    assert clip.gt(0).any() and clip.lt(1).any()  # the ratios straddle the clip range


@pytest.mark.parametrize("n, size", [(1024, 64), (40, 16), (70, 7), (10, 32), (65, 64)])
def test_advantages_of_an_epoch_normalised_at_once_are_each_minibatch_s_to_the_bit(n, size):
    """PPO normalises every minibatch's advantages of an epoch in one pass over a
    [minibatches, rows] view (the shorter last one apart); the loss and its gradient are those of
    clipped_terms normalising each minibatch itself."""
    from rlpipe.policies.ppo import _normalise_per_minibatch

    g = torch.Generator().manual_seed(n + size)
    adv = torch.randn(n, generator=g) * 3.0 + 0.5
    at_once = _normalise_per_minibatch(adv, size)
    assert torch.equal(at_once, torch.cat([normalise_adv(x) for x in adv.split(size)]))
    # the loss path: clipped_terms given the normalised advantages equals it normalising them
    m = min(n, size)  # the first minibatch
    r = _rows(m, seed=4)
    r["adv"] = adv[:m]
    given = at_once[:m]
    grads = []
    for adv_in, ready in ((r["adv"], False), (given, True)):
        log_prob = r["log_prob"].clone().requires_grad_(True)
        value = r["value"].clone().requires_grad_(True)
        terms = clipped_terms(CFG, log_prob, r["entropy"], value, r["logp"], adv_in, r["ret"],
                              r["old"], adv_normalised=ready)
        terms.loss.backward()
        grads.append((terms.loss, log_prob.grad, value.grad))
    for a, b in zip(*grads):
        assert torch.equal(a, b)


def test_normalise_adv_gives_mean_0_and_std_1_and_leaves_one_row():
    adv = torch.randn(50, generator=torch.Generator().manual_seed(5)) * 4 + 2
    for unbiased in (True, False):
        out = normalise_adv(adv, unbiased)
        torch.testing.assert_close(out.mean(), torch.tensor(0.0), atol=1e-5, rtol=0)
        torch.testing.assert_close(out.std(unbiased=unbiased), torch.tensor(1.0), atol=1e-5, rtol=0)
    one = torch.tensor([3.0])
    assert torch.equal(normalise_adv(one), one)
