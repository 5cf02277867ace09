"""ppo_terms, the clipped-objective loss of PPO, LSTM-PPO and MAPPO: masked rows and the
advantage normalisation."""
from __future__ import annotations

import pytest
import torch
from easydict import EasyDict

from rlpipe.policies._ppo_loss import ppo_terms

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
