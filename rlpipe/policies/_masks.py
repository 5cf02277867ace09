"""Action masks in policies: masked logits and masked argmax/sampling over valid actions.

A mask is bool ``[B, n_actions]`` for Discrete(n), True where the action is allowed. For a 1-D
MultiDiscrete(nvec) it is ``[B, sum(nvec)]``, one segment per component (or a tuple/list of
per-component masks ``[B, nvec[i]]``, joined into that layout), as sb3-contrib's MaskablePPO:
each component's Categorical is masked by its own segment. Invalid logits are set to
``MASKED_LOGIT`` (a large negative number, not −inf): softmax gives them probability 0 exactly
in float32, and ``Categorical.entropy`` then adds 0·(−1e8) = 0 for them, never NaN.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np
import torch

from rlpipe.mask_layout import empty_segments, flat_mask, mask_segments
from rlpipe.models.distributions import MultiCategorical

MASKED_LOGIT = -1e8


def masked_logits(logits: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
    """`logits` with the invalid actions set to MASKED_LOGIT (`mask` None: unchanged)."""
    if mask is None:
        return logits
    return torch.where(mask, logits, torch.full_like(logits, MASKED_LOGIT))


def as_mask(mask: Any, batch: int, n_actions: int, who: str,
            sizes: Optional[Sequence[int]] = None) -> Optional[np.ndarray]:
    """`mask` as a bool array [batch, n_actions] (None stays None), with a clear error.
    `sizes`: the segments (MultiDiscrete nvec; default one segment of n_actions)."""
    if mask is None:
        return None
    sizes = [n_actions] if sizes is None else list(sizes)
    arr = flat_mask(mask, sizes)
    if arr.shape != (batch, n_actions):
        layout = "n_actions" if len(sizes) == 1 else f"sum(nvec)] (segments {sizes}"
        raise ValueError(f"{who}: action_mask must have shape [batch, {layout}] = "
                         f"[{batch}, {n_actions}], got {arr.shape}")
    empty = empty_segments(arr, sizes)
    if empty.any():
        row, part = (int(i) for i in np.argwhere(empty)[0])
        what = "" if len(sizes) == 1 else f" for action component {part}"
        raise ValueError(f"{who}: action_mask row {row} allows no action{what} (all False); "
                         f"every row must allow at least one action (one value per component)")
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
    """A Categorical (or MultiCategorical) `dist` restricted to the valid actions of `mask`
    (None: `dist` itself): log-probabilities renormalised over them, entropy over them only
    (per component, then summed, for a MultiCategorical)."""
    if mask is None:
        return dist
    if isinstance(dist, MultiCategorical):
        sizes: List[int] = [int(p.logits.shape[-1]) for p in dist.parts]
        logits = torch.cat([p.logits for p in dist.parts], dim=-1)
        return MultiCategorical(masked_logits(logits, mask.bool()), sizes)
    return torch.distributions.Categorical(logits=masked_logits(dist.logits, mask.bool()),
                                           validate_args=False)


def masked_mode(dist: Any) -> torch.Tensor:
    """The most likely action of a (masked) Categorical or MultiCategorical."""
    return dist.mode if isinstance(dist, MultiCategorical) else dist.logits.argmax(-1)


def policy_mask(space: Any, action_mask: Any, batch: int, face: str,
                device: Any) -> Optional[torch.Tensor]:
    """`action_mask` as a bool tensor [batch, n_actions or sum(nvec)] on `device` (None: no
    mask); Discrete and 1-D MultiDiscrete spaces only."""
    if action_mask is None:
        return None
    sizes = mask_segments(space)
    if sizes is None:
        raise ValueError(f"{face}: action masks need a Discrete or 1-D MultiDiscrete action "
                         f"space, this policy acts in {space}; give the env no masks")
    return torch.as_tensor(as_mask(action_mask, batch, sum(sizes), face, sizes), device=device)


__all__ = ["MASKED_LOGIT", "as_mask", "masked_argmax", "masked_categorical", "masked_logits",
           "masked_mode", "policy_mask", "sample_valid"]
