"""The clipped-objective PPO loss (Schulman et al. 2017), shared by PPO and LSTM-PPO; see
ppo.py's docstring for the formulas. `mask` (bool, the shape of `logp`) leaves padded or
invalid steps of a sequence minibatch out of every mean."""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

import torch
from torch.distributions import Distribution


class PPOTerms(NamedTuple):
    loss: torch.Tensor
    policy_loss: torch.Tensor
    value_loss: torch.Tensor
    entropy: torch.Tensor
    approx_kl: torch.Tensor
    clip_frac: torch.Tensor


def masked_mean(x: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
    """mean(x) over the entries where `mask` is True (all when it is None)."""
    if mask is None:
        return x.mean()
    m = mask.to(x.dtype)
    return (x * m).sum() / m.sum().clamp(min=1.0)


def ppo_terms(c: Any, dist: Distribution, value: torch.Tensor, action: torch.Tensor,
              logp: torch.Tensor, adv: torch.Tensor, ret: torch.Tensor,
              old_value: Optional[torch.Tensor] = None,
              mask: Optional[torch.Tensor] = None) -> PPOTerms:
    """The loss and its parts for one minibatch; `c` is the policy's `learn` config (clip_ratio,
    adv_norm, value_clip, value_coef, entropy_coef)."""
    log_ratio = dist.log_prob(action) - logp
    ratio = log_ratio.exp()
    adv = adv.float()
    if c.adv_norm:
        n = adv.numel() if mask is None else int(mask.sum())
        if n > 1:
            mean = masked_mean(adv, mask)
            std = masked_mean((adv - mean) ** 2, mask).mul(n / (n - 1)).sqrt()
            adv = (adv - mean) / (std + 1e-8)
    policy_loss = masked_mean(torch.max(-adv * ratio, -adv * ratio.clamp(1.0 - c.clip_ratio,
                                                                          1.0 + c.clip_ratio)), mask)
    ret = ret.float()
    value_err = (value - ret) ** 2
    if c.value_clip is not None:  # the critic may not move further than c from its old value
        old = old_value.float()
        clipped = old + (value - old).clamp(-c.value_clip, c.value_clip)
        value_err = torch.max(value_err, (clipped - ret) ** 2)
    value_loss = 0.5 * masked_mean(value_err, mask)
    entropy = masked_mean(dist.entropy(), mask)
    loss = policy_loss + c.value_coef * value_loss - c.entropy_coef * entropy
    with torch.no_grad():
        approx_kl = masked_mean((ratio - 1.0) - log_ratio, mask)  # Schulman's low-variance one
        clip_frac = masked_mean(((ratio - 1.0).abs() > c.clip_ratio).float(), mask)
    return PPOTerms(loss, policy_loss, value_loss, entropy, approx_kl, clip_frac)
