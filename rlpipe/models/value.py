"""A state-value network V(s) (IQL's expectile value)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import gymnasium as gym
import torch
from torch import nn

from .encoder import build_encoder


class ValueNetwork(nn.Module):
    """obs [B, *obs_shape] (or a Dict/Tuple batch) → V(s) [B]: an encoder and a linear head."""

    def __init__(self, obs_space: gym.Space, hidden: Sequence[int] = (256, 256),
                 encoders: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.encoder = build_encoder(obs_space, hidden, encoders=encoders)
        self.head = nn.Linear(self.encoder.out_dim, 1)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(obs)).squeeze(-1)
