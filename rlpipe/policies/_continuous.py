"""Pieces shared by the continuous-control policies (SAC, TD3): the map between an actor's
[-1, 1] box and the env's Box bounds, seeded torch RNGs, and a clipped gradient step."""
from __future__ import annotations

from typing import List

import gymnasium as gym
import numpy as np
import torch

from rlpipe.models import UnsupportedSpaceError

CONTINUOUS_HINT = ("For Discrete action spaces use DQN (get_policy('dqn')) or PPO "
                   "(get_policy('ppo')).")


class BoxActions:
    """``to_env``: a unit action in [-1, 1]^A → the env's [low, high] (float32, clipped);
    ``to_unit``: a batch of env actions (torch) → [-1, 1]^A for the critics.

    The space must be a 1-D Box with finite bounds (an actor's tanh output cannot cover an
    infinite range); anything else raises `UnsupportedSpaceError` naming `owner`.
    """

    def __init__(self, space: gym.spaces.Box, owner: str) -> None:
        if len(space.shape) != 1:
            raise UnsupportedSpaceError(
                f"{owner} needs a 1-D Box action space, got {space!r}; reshape the actions to "
                "a vector with a gymnasium.ActionWrapper.")
        low, high = space.low.astype(np.float64), space.high.astype(np.float64)
        if not (np.isfinite(low).all() and np.isfinite(high).all()):
            raise UnsupportedSpaceError(
                f"{owner} needs finite action bounds to scale its tanh actor output, got {space!r};"
                " wrap the env with gymnasium.wrappers.ClipAction / RescaleAction to bound it.")
        self.dim = int(space.shape[0])
        self.low = low.astype(np.float32)
        self.high = high.astype(np.float32)
        self.bias = ((high + low) / 2.0).astype(np.float32)
        self.scale = ((high - low) / 2.0).astype(np.float32)
        self._torch: dict = {}

    def to_env(self, unit: np.ndarray) -> np.ndarray:
        action = self.bias + self.scale * np.asarray(unit, np.float32)
        return np.clip(action, self.low, self.high).astype(np.float32, copy=False)

    def to_unit(self, action: torch.Tensor) -> torch.Tensor:
        key = action.device
        if key not in self._torch:
            self._torch[key] = (torch.as_tensor(self.bias, device=key),
                                torch.as_tensor(self.scale, device=key))
        bias, scale = self._torch[key]
        if action.dim() != 2 or action.shape[1] != self.dim:
            raise ValueError(f"expected a batch of actions of shape [B, {self.dim}], got "
                             f"{tuple(action.shape)}; store Box actions as float arrays.")
        return (action.float() - bias) / scale


@torch.no_grad()
def polyak(target: List[torch.Tensor], source: List[torch.Tensor], tau: float) -> None:
    """target ← tau · source + (1 − tau) · target, over two parameter lists at once."""
    torch._foreach_lerp_(target, source, tau)


def set_requires_grad(params: List[torch.Tensor], flag: bool) -> None:
    for p in params:
        p.requires_grad_(flag)


def reject_collect_kwargs(owner: str, unknown: dict, accepted: str) -> None:
    """A clear error for collect kwargs a continuous policy does not take (e.g. `eps` from an
    epsilon schedule left in the pipeline)."""
    if unknown:
        raise TypeError(
            f"{owner}.collect_mode.forward got unexpected collect kwargs {sorted(unknown)} (it "
            f"takes {accepted}). {owner} explores on its own: remove eps_greedy_handler (or "
            "whatever sets ctx.collect_kwargs) from the pipeline.")
