"""TD targets over stored sequences (R2D2, Kapturowski et al. 2019): invertible value rescaling
and n-step targets that stop at the sequence's (masked) end."""
from __future__ import annotations

from typing import Any, Optional

import torch
import torch.nn.functional as F


def value_rescale(x: torch.Tensor, eps: float = 1e-3) -> torch.Tensor:
    """h(x) = sign(x)(√(|x| + 1) − 1) + εx (Pohlen et al. 2018; R2D2 takes ε = 1e-3)."""
    return torch.sign(x) * (torch.sqrt(x.abs() + 1.0) - 1.0) + eps * x


def value_rescale_inv(x: torch.Tensor, eps: float = 1e-3) -> torch.Tensor:
    """h⁻¹(x) = sign(x)(((√(1 + 4ε(|x| + 1 + ε)) − 1) / 2ε)² − 1)."""
    root = (torch.sqrt(1.0 + 4.0 * eps * (x.abs() + 1.0 + eps)) - 1.0) / (2.0 * eps)
    return torch.sign(x) * (root * root - 1.0)


def sequence_nstep_targets(reward: torch.Tensor, terminated: torch.Tensor, mask: torch.Tensor,
                           next_value: torch.Tensor, gamma: float, nstep: int,
                           rescale_eps: Optional[float] = None) -> torch.Tensor:
    """n-step targets y_t [B, T] of a batch of sequences whose valid steps are a prefix (`mask`).

    `next_value` [B, T + 1] is the bootstrap value of each position j of the sequence extended
    by the last valid step's next observation (j = T' + 1 holds V(next_obs[T']) where T' is
    the last valid step). A step t looks m = min(n, valid steps left) steps ahead:
        y_t = Σ_{i<m} γ^i r_{t+i} + γ^m (1 − done) V(t + m)
    `done`: the episode terminated within those m steps (a truncation still bootstraps, from the
    true final observation). With `rescale_eps` the value is rescaled, y = h(Σ … + γ^m h⁻¹(V)).
    Steps outside the mask get meaningless values (mask the loss)."""
    _, length = reward.shape
    m = mask.float()
    pad = (0, nstep)
    r, valid, term = (F.pad(v, pad) for v in (reward.float() * m, m, terminated.float() * m))
    ret = torch.zeros_like(m)
    steps = torch.zeros_like(m)
    done = torch.zeros_like(m)
    for i in range(nstep):
        ret = ret + gamma ** i * r[:, i:i + length]
        steps = steps + valid[:, i:i + length]
        done = torch.maximum(done, term[:, i:i + length])
    index = torch.arange(length, device=reward.device) + steps.long()
    boot = next_value.gather(1, index)
    if rescale_eps is not None:
        boot = value_rescale_inv(boot, rescale_eps)
    target = ret + gamma ** steps * (1.0 - done) * boot
    return value_rescale(target, rescale_eps) if rescale_eps is not None else target


def append_last_next(obs: Any, next_obs: Any, last: torch.Tensor) -> Any:
    """obs [B, T, ...] → [B, T + 1, ...] with next_obs[b, last[b]] at position last[b] + 1 (zeros
    after it): the observations a sequence's bootstrap values are computed on. Dicts per key."""
    if isinstance(obs, dict):
        return {k: append_last_next(obs[k], next_obs[k], last) for k in obs}
    out = torch.cat([obs, torch.zeros_like(obs[:, :1])], dim=1)
    rows = torch.arange(obs.shape[0], device=obs.device)
    out[rows, last + 1] = next_obs[rows, last]
    return out


def time_slice(obs: Any, start: int, stop: Optional[int] = None) -> Any:
    """obs[:, start:stop] (per key for dict observations)."""
    if isinstance(obs, dict):
        return {k: time_slice(v, start, stop) for k, v in obs.items()}
    return obs[:, start:stop]
