"""Inputs with an agent axis for multi-agent policies: the agent mask, per-agent action masks,
and batches whose absent agents carry zeros."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Dict, Optional

import gymnasium as gym
import numpy as np
import torch

from rlpipe.models import batch_rows
from rlpipe.models.multi_agent import agent_rows

from ._masks import policy_mask

__all__ = ["agent_action_mask", "present_mask", "zero_absent"]


def present_mask(policy: Any, obs: Any, agent_mask: Any, device: torch.device,
                 face: str) -> torch.Tensor:
    """`agent_mask` as bool [B, A] on `device` (every agent present when None), after checking
    that `obs` has the agent axis [B, A, ...] of `policy.n_agents` agents."""
    leaf = obs
    while isinstance(leaf, Mapping):
        leaf = next(iter(leaf.values()))
    B, A = batch_rows(obs), policy.n_agents
    if len(np.shape(leaf)) < 2 or np.shape(leaf)[1] != A:
        raise ValueError(f"{type(policy).__name__} {face}: observations need the shape "
                         f"[n_envs, n_agents={A}, ...], got {tuple(np.shape(leaf))}; act "
                         f"through a MultiAgentEnvManager (it stacks the agents on axis 1)")
    if agent_mask is None:
        return torch.ones((B, A), dtype=torch.bool, device=device)
    mask = torch.as_tensor(np.asarray(agent_mask), device=device).bool()
    if tuple(mask.shape) != (B, A):
        raise ValueError(f"{type(policy).__name__} {face}: agent_mask must have shape "
                         f"[n_envs, n_agents] = [{B}, {A}], got {tuple(mask.shape)}")
    return mask


def agent_action_mask(space: gym.Space, action_mask: Any, present: torch.Tensor,
                      face: str) -> Optional[torch.Tensor]:
    """`action_mask` [B, A, n] → bool [B·A, n] (row b·A + i); an absent agent's row allows every
    action (its mask may be all False: it does not act). None stays None."""
    if action_mask is None:
        return None
    mask = torch.as_tensor(np.asarray(action_mask), device=present.device).bool()
    mask = mask.reshape(present.numel(), -1) | ~present.reshape(-1, 1)
    return policy_mask(space, mask.cpu().numpy(), present.numel(), face, present.device)


def zero_absent(batch: Dict[str, Any], w: torch.Tensor,
                env_keys: tuple = ("global_state",)) -> Dict[str, Any]:
    """Every per-agent entry [N, A, ...] of `batch` set to 0 where the agent is absent (`w`
    False), so nothing an absent agent carries reaches a loss or a gradient; `env_keys` are
    per-env entries [N, ...] and stay."""
    def zero(t: torch.Tensor) -> torch.Tensor:
        keep = w.reshape(w.shape + (1,) * (t.dim() - 2))
        return torch.where(keep, t, torch.zeros((), dtype=t.dtype, device=t.device))
    return {k: v if k in env_keys else agent_rows(v, zero) for k, v in batch.items()}
