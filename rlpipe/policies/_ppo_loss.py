"""The clipped-objective PPO loss (Schulman et al. 2017), shared by PPO, LSTM-PPO and MAPPO/IPPO;
see ppo.py's docstring for the formulas. `mask` (bool, the shape of `logp`) leaves rows out of
every mean and of the ratio: padded steps of a sequence minibatch, absent agents of a multi-agent
one."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

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


def half_square(diff: torch.Tensor) -> torch.Tensor:
    """½·diff², PPO's value error."""
    return 0.5 * diff ** 2


def ppo_terms(c: Any, dist: Distribution, value: torch.Tensor, action: torch.Tensor,
              logp: torch.Tensor, adv: torch.Tensor, ret: torch.Tensor,
              old_value: Optional[torch.Tensor] = None,
              mask: Optional[torch.Tensor] = None, *,
              value_err: Callable[[torch.Tensor], torch.Tensor] = half_square,
              unbiased_adv_std: bool = True) -> PPOTerms:
    """The loss and its parts for one minibatch; `c` is the policy's `learn` config (clip_ratio,
    adv_norm, value_clip, value_coef, entropy_coef). `value_err` maps V − R to the value error
    (MAPPO: Huber); `unbiased_adv_std` normalises advantages by the sample std (n − 1), else by
    the population std (n)."""
    log_ratio = dist.log_prob(action) - logp
    if mask is not None:  # a left-out row has ratio 1: its log-prob can never overflow the exp
        log_ratio = torch.where(mask, log_ratio, 0.0)
    ratio = log_ratio.exp()
    adv = adv.float()
    if c.adv_norm:
        n = adv.numel() if mask is None else int(mask.sum())
        if n > 1:
            mean = masked_mean(adv, mask)
            std = masked_mean((adv - mean) ** 2, mask).mul(n / (n - int(unbiased_adv_std))).sqrt()
            adv = (adv - mean) / (std + 1e-8)
    policy_loss = masked_mean(torch.max(-adv * ratio, -adv * ratio.clamp(1.0 - c.clip_ratio,
                                                                          1.0 + c.clip_ratio)), mask)
    ret = ret.float()
    err = value_err(value - ret)
    if c.value_clip is not None:  # the critic may not move further than c from its old value
        old = old_value.float()
        err = torch.max(err, value_err(old + (value - old).clamp(-c.value_clip, c.value_clip) - ret))
    value_loss = masked_mean(err, mask)
    entropy = masked_mean(dist.entropy(), mask)
    loss = policy_loss + c.value_coef * value_loss - c.entropy_coef * entropy
    with torch.no_grad():
        approx_kl = masked_mean((ratio - 1.0) - log_ratio, mask)  # Schulman's low-variance one
        clip_frac = masked_mean(((ratio - 1.0).abs() > c.clip_ratio).float(), mask)
    return PPOTerms(loss, policy_loss, value_loss, entropy, approx_kl, clip_frac)
