"""Action masks in policies: masked logits and masked argmax/sampling over valid actions.

A mask is bool ``[B, n_actions]``, True where the action is allowed. Invalid logits are set to
``MASKED_LOGIT`` (a large negative number, not −inf): softmax gives them probability 0 exactly
in float32, and ``Categorical.entropy`` then adds 0·(−1e8) = 0 for them, never NaN.
"""

from __future__ import annotations

from typing import Any, Optional

import gymnasium as gym
import numpy as np
import torch

MASKED_LOGIT = -1e8


def masked_logits(logits: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
    """`logits` with the invalid actions set to MASKED_LOGIT (`mask` None: unchanged)."""
    if mask is None:
        return logits
    return torch.where(mask, logits, torch.full_like(logits, MASKED_LOGIT))


def as_mask(mask: Any, batch: int, n_actions: int, who: str) -> Optional[np.ndarray]:
    """`mask` as a bool array [batch, n_actions] (None stays None), with a clear error."""
    if mask is None:
        return None
    arr = np.asarray(mask, dtype=np.bool_)
    if arr.shape != (batch, n_actions):
        raise ValueError(f"{who}: action_mask must have shape [batch, n_actions] = "
                         f"[{batch}, {n_actions}], got {arr.shape}")
    if not arr.any(axis=1).all():
        row = int(np.flatnonzero(~arr.any(axis=1))[0])
        raise ValueError(f"{who}: action_mask row {row} allows no action (all False); every row "
                         f"must allow at least one action")
    return arr


def masked_argmax(q: np.ndarray, mask: Optional[np.ndarray]) -> np.ndarray:
    """Argmax per row over the valid actions only."""
    if mask is None:
        return q.argmax(axis=1)
    return np.where(mask, q, -np.inf).argmax(axis=1)


def sample_valid(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """One uniformly random valid action per row of `mask`."""
    u = rng.random(mask.shape)
    return np.where(mask, u, -1.0).argmax(axis=1)


def masked_categorical(dist: Any, mask: Optional[torch.Tensor]) -> Any:
    """A Categorical `dist` restricted to the valid actions of `mask` (None: `dist` itself):
    log-probabilities renormalised over them, entropy over them only."""
    if mask is None:
        return dist
    return torch.distributions.Categorical(logits=masked_logits(dist.logits, mask.bool()),
                                           validate_args=False)


def discrete_mask(space: Any, action_mask: Any, batch: int, face: str,
                  device: Any) -> Optional[torch.Tensor]:
    """`action_mask` as a bool tensor on `device` (None: no mask); Discrete spaces only."""
    if action_mask is None:
        return None
    if not isinstance(space, gym.spaces.Discrete):
        raise ValueError(f"{face}: action masks need a Discrete action space, this policy acts "
                         f"in {space}; give the env no masks")
    return torch.as_tensor(as_mask(action_mask, batch, int(space.n), face), device=device)
