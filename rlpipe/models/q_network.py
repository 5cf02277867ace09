"""Q-value network for discrete actions, with an optional dueling head."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import gymnasium as gym
import torch
from torch import nn

from .encoder import build_encoder


class QNetwork(nn.Module):
    """obs [B, *obs_shape] (or a Dict/Tuple batch) → Q-values [B, n_actions].

    Dueling (Wang et al. 2016): Q(s, a) = V(s) + A(s, a) − mean_a A(s, a), with V and A linear
    heads on the shared encoder features.
    """

    def __init__(self, obs_space: gym.Space, n_actions: int, hidden: Sequence[int] = (256, 256),
                 dueling: bool = False, encoders: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        if int(n_actions) < 1:
            raise ValueError(f"QNetwork needs n_actions >= 1, got {n_actions}.")
        self.encoder = build_encoder(obs_space, hidden, encoders=encoders)
        self.obs_space = obs_space  # a policy given this network reads its spaces here
        self.n_actions = int(n_actions)
        self.dueling = bool(dueling)
        self.head = nn.Linear(self.encoder.out_dim, self.n_actions)
        self.value_head = nn.Linear(self.encoder.out_dim, 1) if self.dueling else None

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        features = self.encoder(obs)
        q = self.head(features)
        if self.value_head is not None:
            q = self.value_head(features) + q - q.mean(dim=-1, keepdim=True)
        return q
