"""Recurrent Q network (R2D2, Kapturowski et al. 2019): encoder → RecurrentCore → Q head.

The encoder is chosen from the observation space as for `QNetwork` (`build_encoder`); the core
is `rlpipe.models.recurrent.RecurrentCore` (LSTM or GRU); the head is linear, or dueling
(Q = V + A − mean A). A state is the core's: a dict of tensors [B, H]; rows where `first` is
True start from zeros (the core zeroes them).
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Sequence, Tuple

import gymnasium as gym
import torch
from torch import nn

from .encoder import build_encoder
from .recurrent import RecurrentCore

State = Dict[str, torch.Tensor]


def fold_time(obs: Any) -> Tuple[Any, int, int]:
    """obs [B, T, ...] (or a dict of such) → ([B*T, ...], B, T)."""
    if isinstance(obs, Mapping):
        parts = {k: fold_time(v) for k, v in obs.items()}
        b, t = next(iter(parts.values()))[1:]
        return {k: p[0] for k, p in parts.items()}, b, t
    return obs.reshape(obs.shape[0] * obs.shape[1], *obs.shape[2:]), obs.shape[0], obs.shape[1]


class RecurrentQNetwork(nn.Module):
    """obs [B, T, ...] + state + first [B, T] → Q-values [B, T, n_actions] and the last state.

    `hidden`: the encoder's fully connected layers; `core_size`: the core's width;
    `kind`: "lstm" or "gru"; `dueling`: a value and an advantage head.
    """

    def __init__(self, obs_space: gym.Space, n_actions: int, hidden: Sequence[int] = (128,),
                 core_size: int = 128, kind: str = "lstm", dueling: bool = True,
                 encoders: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        if int(n_actions) < 1:
            raise ValueError(f"RecurrentQNetwork needs n_actions >= 1, got {n_actions}")
        self.encoder = build_encoder(obs_space, hidden, encoders=encoders)
        self.core = RecurrentCore(self.encoder.out_dim, int(core_size), kind=kind)
        self.n_actions = int(n_actions)
        self.head = nn.Linear(int(core_size), self.n_actions)
        self.value_head = nn.Linear(int(core_size), 1) if dueling else None

    def initial_state(self, n: int) -> State:
        return {k: torch.as_tensor(v) for k, v in self.core.initial_state(n).items()}

    def _q(self, features: torch.Tensor) -> torch.Tensor:
        q = self.head(features)
        if self.value_head is not None:
            q = self.value_head(features) + q - q.mean(dim=-1, keepdim=True)
        return q

    def forward(self, obs: Any, state: State, first: torch.Tensor) -> Tuple[torch.Tensor, State]:
        flat, b, t = fold_time(obs)
        x = self.encoder(flat).reshape(b, t, -1)
        out, state = self.core(x, state, first)
        return self._q(out), state

    def step(self, obs: Any, state: State, first: torch.Tensor) -> Tuple[torch.Tensor, State]:
        """One step: obs [B, ...], first [B] → Q [B, n_actions] and the state after it."""
        out, state = self.core.step(self.encoder(obs), state, first)
        return self._q(out), state
