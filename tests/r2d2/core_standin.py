"""A private, minimal stand-in for `rlpipe.models.recurrent.RecurrentCore` (built by the LSTM-PPO
job, not in main yet), with the agreed interface, so R2D2's tests run before it lands:

    RecurrentCore(input_dim, hidden, kind="lstm"|"gru")
    forward(x [B, T, D], state, first [B, T]) -> (out [B, T, H], state)
    step(x [B, D], state, first [B]) -> (out [B, H], state)
    initial_state(n) -> {"h": [n, H], "c": [n, H]} (LSTM) or {"h": [n, H]} (GRU)

`install()` registers it as `rlpipe.models.recurrent` only when the real module is missing.
Delete this file (and its call in tests/conftest.py) once the real core is in main.
"""
from __future__ import annotations

import importlib.util
import sys
import types
from typing import Dict, Tuple

import torch
from torch import nn


class RecurrentCore(nn.Module):
    def __init__(self, input_dim: int, hidden: int, kind: str = "lstm") -> None:
        super().__init__()
        if kind not in ("lstm", "gru"):
            raise ValueError(f"RecurrentCore: kind must be 'lstm' or 'gru', got {kind!r}")
        self.kind, self.hidden = kind, int(hidden)
        cell = nn.LSTM if kind == "lstm" else nn.GRU
        self.rnn = cell(int(input_dim), self.hidden, batch_first=True)

    def initial_state(self, n: int) -> Dict[str, torch.Tensor]:
        keys = ("h", "c") if self.kind == "lstm" else ("h",)
        return {k: torch.zeros(n, self.hidden) for k in keys}

    def _pack(self, state: Dict[str, torch.Tensor]):
        h = state["h"].unsqueeze(0).contiguous()
        return (h, state["c"].unsqueeze(0).contiguous()) if self.kind == "lstm" else h

    def _unpack(self, packed) -> Dict[str, torch.Tensor]:
        if self.kind == "lstm":
            return {"h": packed[0].squeeze(0), "c": packed[1].squeeze(0)}
        return {"h": packed.squeeze(0)}

    def forward(self, x: torch.Tensor, state: Dict[str, torch.Tensor],
                first: torch.Tensor) -> Tuple[torch.Tensor, Dict[str, torch.Tensor]]:
        first = first.bool()
        if not first[:, 1:].any():  # one fused call: at most the first step resets
            keep = (~first[:, 0]).to(x.dtype)[:, None]
            out, packed = self.rnn(x, self._pack({k: v * keep for k, v in state.items()}))
            return out, self._unpack(packed)
        outs = []
        for t in range(x.shape[1]):
            out, state = self.step(x[:, t], state, first[:, t])
            outs.append(out)
        return torch.stack(outs, 1), state

    def step(self, x: torch.Tensor, state: Dict[str, torch.Tensor],
             first: torch.Tensor) -> Tuple[torch.Tensor, Dict[str, torch.Tensor]]:
        keep = (~first.bool()).to(x.dtype)[:, None]
        out, packed = self.rnn(x[:, None], self._pack({k: v * keep for k, v in state.items()}))
        return out[:, 0], self._unpack(packed)


def install() -> None:
    """Register the stand-in as `rlpipe.models.recurrent` when the real module is absent."""
    if importlib.util.find_spec("rlpipe.models.recurrent") is not None:
        return
    module = types.ModuleType("rlpipe.models.recurrent")
    module.RecurrentCore = RecurrentCore
    module.__doc__ = "stand-in (tests/r2d2/core_standin.py)"
    sys.modules["rlpipe.models.recurrent"] = module
