"""The recurrent core shared by recurrent policies (LSTM-PPO, R2D2): one LSTM or GRU layer over a
time axis, whose state is reset to zeros at every episode start (`first`, ALF's StepType.FIRST).

    core = RecurrentCore(input_dim, hidden, kind="lstm")      # or kind="gru"
    state = core.initial_state(n)                             # {"h": [n, H], "c": [n, H]} (gru: h)
    out, state = core(x [B, T, D], state, first [B, T])       # out [B, T, H]
    out, _ = core(x, state, first, final_state=False)         # out only (training)
    out, state = core.step(x [B, D], state, first [B])        # one acting step
    segments = episode_segments(first)                        # the layout below, made once
    out = core.over_segments(segments.pad(x), state, segments)  # [B·T, H], for each core

Where `first[b, t]` is True the state entering step t of row b is zeros (the episode begins
there), so a chunk of a rollout may hold several episodes. When no row starts an episode after
its first step, the whole chunk runs in one fused `nn.LSTM`/`nn.GRU` call. Otherwise, when only
the outputs are wanted, each row is cut into its episode segments, which are right-padded into
one batch [segments, longest, D] and run in one fused call: a segment starts from the row's
state or from zeros, exactly as the reset would leave it, and padding after a segment's end
never reaches its outputs (one fused call costs about a tenth of the step loop's forward and
backward on the CPU). Only when the state after T is wanted as well does the chunk run step by
step, since the padding would run on into a padded segment's final state. Cores that run
over the same rows (an actor's and a critic's) share one layout, `episode_segments(first)`, and
one padded input when their inputs are the same. All three paths compute the same recurrence
with the same weights (results agree to float precision).
"""
from __future__ import annotations

from typing import Dict, NamedTuple, Optional, Tuple

import torch
from torch import nn

__all__ = ["RecurrentCore", "RecurrentState", "Segments", "episode_segments"]

RecurrentState = Dict[str, torch.Tensor]
_KINDS = ("lstm", "gru")


class RecurrentCore(nn.Module):
    """One LSTM or GRU layer (batch first) with reset-at-first over time; see the module doc."""

    def __init__(self, input_dim: int, hidden: int, kind: str = "lstm") -> None:
        super().__init__()
        if kind not in _KINDS:
            raise ValueError(f"RecurrentCore(kind={kind!r}): kind must be one of {_KINDS}")
        if int(input_dim) < 1 or int(hidden) < 1:
            raise ValueError(f"RecurrentCore: input_dim and hidden must be >= 1, got "
                             f"input_dim={input_dim}, hidden={hidden}")
        self.kind, self.input_dim, self.hidden = kind, int(input_dim), int(hidden)
        cls = nn.LSTM if kind == "lstm" else nn.GRU
        self.rnn = cls(self.input_dim, self.hidden, batch_first=True)
        for name, param in self.rnn.named_parameters():
            if "weight" in name:
                nn.init.orthogonal_(param, 1.0)
            else:
                nn.init.zeros_(param)

    @property
    def out_dim(self) -> int:
        return self.hidden

    @property
    def state_keys(self) -> Tuple[str, ...]:
        return ("h", "c") if self.kind == "lstm" else ("h",)

    def initial_state(self, n: int, device: Optional[torch.device] = None) -> RecurrentState:
        """Zeros: {"h": [n, H], "c": [n, H]} for an LSTM, {"h": [n, H]} for a GRU."""
        device = device if device is not None else next(self.parameters()).device
        return {k: torch.zeros(n, self.hidden, device=device) for k in self.state_keys}

    def _pack(self, state: RecurrentState, keep: torch.Tensor):
        """The torch RNN's (h, c) / h with a leading layer axis; rows multiplied by `keep`."""
        missing = [k for k in self.state_keys if k not in state]
        if missing:
            raise KeyError(f"RecurrentCore({self.kind}): the state lacks {missing} (has "
                           f"{sorted(state)}); pass core.initial_state(n) or a state it returned")
        hs = tuple((state[k] * keep).unsqueeze(0).contiguous() for k in self.state_keys)
        return hs if self.kind == "lstm" else hs[0]

    def _unpack(self, hs) -> RecurrentState:
        if self.kind == "lstm":
            return {"h": hs[0].squeeze(0), "c": hs[1].squeeze(0)}
        return {"h": hs.squeeze(0)}

    def forward(self, x: torch.Tensor, state: RecurrentState, first: torch.Tensor, *,
                final_state: bool = True) -> Tuple[torch.Tensor, Optional[RecurrentState]]:
        """x [B, T, D], state (each [B, H]), first [B, T] bool → (out [B, T, H], state after T);
        with `final_state=False` the state after T is None (and resets inside the chunk cost one
        fused call instead of T)."""
        if x.dim() != 3 or first.shape != x.shape[:2]:
            raise ValueError(f"RecurrentCore.forward: x must be [B, T, D] and first [B, T], got "
                             f"x {tuple(x.shape)} and first {tuple(first.shape)}")
        first = first.bool()
        if not final_state:
            segments = episode_segments(first, x.dtype)
            if segments is not None:
                out = self.over_segments(segments.pad(x), state, segments)
                return out.reshape(segments.batch, segments.steps, -1), None
            return self.fused(x, state, first)[0], None
        if not bool(first[:, 1:].any()):  # resets only at t = 0: one fused call
            return self.fused(x, state, first)
        keep = (~first).to(x.dtype).unsqueeze(-1)  # [B, T, 1]: 0 where an episode starts
        outs = []
        for t in range(x.shape[1]):
            out, hs = self.rnn(x[:, t:t + 1], self._pack(state, keep[:, t]))
            state = self._unpack(hs)
            outs.append(out)
        return torch.cat(outs, dim=1), state

    def fused(self, x: torch.Tensor, state: RecurrentState, first: torch.Tensor
              ) -> Tuple[torch.Tensor, RecurrentState]:
        """x [B, T, D] in one fused call, the state zeroed where `first[:, 0]`; right only when
        no row begins an episode after t = 0 (`episode_segments(first)` is None)."""
        keep = (~first[:, :1]).to(x.dtype)  # [B, 1]
        out, hs = self.rnn(x, self._pack(state, keep))
        return out, self._unpack(hs)

    def over_segments(self, padded: torch.Tensor, state: RecurrentState, segments: "Segments"
                      ) -> torch.Tensor:
        """The outputs [B·T, H] (steps row-major) of rows cut into `segments`, from their padded
        input `segments.pad(x)` in one fused call: a segment at t = 0 continues its row's state
        (zeros when first), a later one starts from zeros. Several cores over the same rows share
        the layout (and the padded input, when their inputs are the same)."""
        missing = [k for k in self.state_keys if k not in state]
        if missing:
            raise KeyError(f"RecurrentCore({self.kind}): the state lacks {missing} (has "
                           f"{sorted(state)}); pass core.initial_state(n) or a state it returned")
        hs = tuple((state[k][segments.row] * segments.keep).unsqueeze(0).contiguous()
                   for k in self.state_keys)
        out, _ = self.rnn(padded, hs if self.kind == "lstm" else hs[0])
        return segments.unpad(out)

    def step(self, x: torch.Tensor, state: RecurrentState, first: torch.Tensor
             ) -> Tuple[torch.Tensor, RecurrentState]:
        """One step: x [B, D], first [B] → (out [B, H], state)."""
        out, state = self.forward(x.unsqueeze(1), state, first.reshape(-1, 1))
        return out.squeeze(1), state


class Segments(NamedTuple):
    """Rows [B, T] cut at their episode starts (`episode_segments`): each row opens a segment at
    t = 0 and at every later step where `first` is True."""

    seg: torch.Tensor    # [B·T] the segment of each step, row-major
    pos: torch.Tensor    # [B·T] the step's position within its segment
    row: torch.Tensor    # [S] the row each segment is cut from
    keep: torch.Tensor   # [S, 1] 1 where a segment continues its row's state (t = 0, not first)
    longest: int         # the longest segment's length (the padded time axis)
    batch: int
    steps: int

    def pad(self, x: torch.Tensor) -> torch.Tensor:
        """x [B, T, D] (or [B·T, D]) → [S, longest, D]: each segment's steps from position 0,
        zeros after."""
        flat = x.reshape(self.batch * self.steps, -1)
        return flat.new_zeros(self.keep.shape[0], self.longest, flat.shape[-1]).index_put(
            (self.seg, self.pos), flat)

    def unpad(self, out: torch.Tensor) -> torch.Tensor:
        """Outputs [S, longest, H] of the padded segments → [B·T, H], steps row-major."""
        return out[self.seg, self.pos]


def episode_segments(first: torch.Tensor, dtype: torch.dtype = torch.float32
                     ) -> Optional[Segments]:
    """The episode segments of rows whose episodes begin where `first` [B, T] (bool) is True;
    None when no row begins one after t = 0 (the rows themselves are the segments)."""
    if not bool(first[:, 1:].any()):
        return None
    batch, steps = first.shape
    n = batch * steps
    flat_first = first.reshape(-1)
    begins = flat_first.clone()
    begins[::steps] = True                              # every row opens a segment at t = 0
    starts = begins.nonzero().squeeze(1)                # [S] flat index of each segment's start
    seg = begins.long().cumsum(0) - 1                   # [B·T] segment of each step
    pos = torch.arange(n, device=first.device) - starts[seg]  # step within its segment
    longest = int(torch.diff(starts, append=starts.new_tensor([n])).max())
    # a segment at t = 0 continues its row's state (zeros when first); a later one is a reset
    keep = (~flat_first[starts]).to(dtype).unsqueeze(-1)
    return Segments(seg, pos, starts // steps, keep, longest, batch, steps)
