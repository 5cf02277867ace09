"""The clipped-objective PPO loss (Schulman et al. 2017), shared by PPO, LSTM-PPO and MAPPO/IPPO;
see ppo.py's docstring for the formulas. `mask` (bool, the shape of `logp`) leaves rows out of
every mean and of the ratio: padded steps of a sequence minibatch, absent agents of a multi-agent
one.

`ppo_terms` takes a distribution; `clipped_terms` takes the new log-probabilities and entropies
themselves, so that a policy with a Categorical head can compute them from the logits without a
distribution object, and it can leave the statistics that need no gradient (approx-KL, clip
fraction, and the entropy when it has no weight in the loss) to be computed once per epoch from
the stacked `log_ratio`s (`ratio_stats`)."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional, Tuple

import torch
from torch.distributions import Distribution


class PPOTerms(NamedTuple):
    loss: torch.Tensor
    policy_loss: torch.Tensor
    value_loss: torch.Tensor
    entropy: Optional[torch.Tensor]  # None when clipped_terms was given none
    approx_kl: Optional[torch.Tensor]  # None with stats=False
    clip_frac: Optional[torch.Tensor]  # None with stats=False
    log_ratio: torch.Tensor  # log π(a|s) − logp per row, detached (0 where mask is False)


def mean_over(mask: Optional[torch.Tensor],
              dtype: torch.dtype) -> Tuple[Callable[[torch.Tensor], torch.Tensor], Any]:
    """(mean, count): `mean(x)` averages x over the entries where `mask` is True (all when it is
    None), and `count` is how many there are (an int; a 0-dim tensor with a mask, so that it is
    not read back). The weight and the denominator are made once, for every mean of a minibatch."""
    if mask is None:
        return torch.mean, None
    weight = mask.to(dtype)
    count = weight.sum()
    denom = count.clamp(min=1.0)
    return (lambda x: (x * weight).sum() / denom), count


def half_square(value: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """½·(value − target)², PPO's value error."""
    return 0.5 * (value - target) ** 2


def ppo_terms(c: Any, dist: Distribution, value: torch.Tensor, action: torch.Tensor,
              logp: torch.Tensor, adv: torch.Tensor, ret: torch.Tensor,
              old_value: Optional[torch.Tensor] = None,
              mask: Optional[torch.Tensor] = None, *,
              value_err: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = half_square,
              unbiased_adv_std: bool = True) -> PPOTerms:
    """The loss and its parts for one minibatch; `c` is the policy's `learn` config (clip_ratio,
    adv_norm, value_clip, value_coef, entropy_coef). `value_err(V, R)` is the value error per row
    (MAPPO: Huber); `unbiased_adv_std` normalises advantages by the sample std (n − 1), else by
    the population std (n). With a mask, nothing is read back to the host: the count of rows
    stays a tensor."""
    return clipped_terms(c, dist.log_prob(action), dist.entropy(), value, logp, adv, ret,
                         old_value, mask, value_err=value_err, unbiased_adv_std=unbiased_adv_std)


def clipped_terms(c: Any, new_logp: torch.Tensor, entropy: Optional[torch.Tensor],
                  value: torch.Tensor, logp: torch.Tensor, adv: torch.Tensor, ret: torch.Tensor,
                  old_value: Optional[torch.Tensor] = None,
                  mask: Optional[torch.Tensor] = None, *,
                  value_err: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = half_square,
                  unbiased_adv_std: bool = True, stats: bool = True,
                  adv_normalised: bool = False) -> PPOTerms:
    """`ppo_terms` from log π(a|s) per row (`new_logp`) and the entropy per row (`entropy`; None
    leaves it out of the loss, which c.entropy_coef must then be 0 for). With `stats=False`
    approx_kl and clip_frac are None: `ratio_stats(terms.log_ratio)` gives them later. With
    `adv_normalised`, `adv` is taken as it is (the caller normalised it with `normalise_adv`
    where c.adv_norm asks for it)."""
    if entropy is None and c.entropy_coef:
        raise ValueError(f"clipped_terms: policy.learn.entropy_coef={c.entropy_coef} weighs the "
                         "entropy in the loss, but no entropy was given; pass the per-row entropy")
    log_ratio = new_logp - logp
    if mask is not None:  # a left-out row has ratio 1: its log-prob can never overflow the exp
        log_ratio = torch.where(mask, log_ratio, 0.0)
    ratio = log_ratio.exp()
    adv = adv.float()
    mean, count = mean_over(mask, adv.dtype)
    if c.adv_norm and not adv_normalised:
        if mask is None:
            adv = normalise_adv(adv, unbiased_adv_std)
        else:  # normalised where more than one row is present, as the unmasked branch
            centred = adv - mean(adv)
            var = mean(centred ** 2)
            if unbiased_adv_std:  # n / (n − 1) in float64, rounded once as the Python float is
                var = var.mul((count.double() / (count.double() - 1.0)).to(var.dtype))
            adv = torch.where(count > 1, centred / (var.sqrt() + 1e-8), adv)
    neg_adv = -adv
    policy_loss = mean(torch.max(neg_adv * ratio, neg_adv * ratio.clamp(1.0 - c.clip_ratio,
                                                                        1.0 + c.clip_ratio)))
    ret = ret.float()
    err = value_err(value, ret)
    if c.value_clip is not None:  # the critic may not move further than c from its old value
        old = old_value.float()
        err = torch.max(err, value_err(old + (value - old).clamp(-c.value_clip, c.value_clip), ret))
    value_loss = mean(err)
    loss = policy_loss + c.value_coef * value_loss
    if entropy is not None:
        entropy = mean(entropy)
        loss = loss - c.entropy_coef * entropy
    log_ratio = log_ratio.detach()
    approx_kl = clip_frac = None
    if stats:
        approx_kl, clip_frac = ratio_stats(log_ratio, c.clip_ratio, mask)
    return PPOTerms(loss, policy_loss, value_loss, entropy, approx_kl, clip_frac, log_ratio)


def normalise_adv(adv: torch.Tensor, unbiased: bool = True,
                  dim: Optional[int] = None) -> torch.Tensor:
    """Advantages normalised to mean 0 and std 1: over the whole tensor, or along `dim` (dim=1
    of [minibatches, rows]: each minibatch within itself, in one pass and to the same bits as
    one at a time). The std is the sample std (n − 1) when `unbiased`, else the population std;
    a single row is left as it is."""
    n = adv.numel() if dim is None else adv.shape[dim]
    if n <= 1:
        return adv
    if dim is None:
        centred = adv - torch.mean(adv)
        var = torch.mean(centred ** 2).mul(n / (n - int(unbiased)))
    else:
        centred = adv - adv.mean(dim, keepdim=True)
        var = (centred ** 2).mean(dim, keepdim=True).mul(n / (n - int(unbiased)))
    return centred / (var.sqrt() + 1e-8)


@torch.no_grad()
def ratio_stats(log_ratio: torch.Tensor, clip_ratio: float, mask: Optional[torch.Tensor] = None,
                dim: Optional[int] = None) -> "tuple[torch.Tensor, torch.Tensor]":
    """(approx-KL, clip fraction) of the log-ratios: means of (ratio − 1) − log ratio (Schulman's
    low-variance estimate) and of |ratio − 1| > clip_ratio; over every row (those of `mask`),
    or along `dim` (e.g. dim=1 of [minibatches, rows] for one value per minibatch)."""
    excess = log_ratio.exp() - 1.0
    kl, clipped = excess - log_ratio, (excess.abs() > clip_ratio).float()
    if dim is not None:
        return kl.mean(dim), clipped.mean(dim)
    mean, _ = mean_over(mask, kl.dtype)
    return mean(kl), mean(clipped)
