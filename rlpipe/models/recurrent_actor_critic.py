"""A recurrent actor-critic (LSTM-PPO): encoder → RecurrentCore → MLP → action / value heads.

    obs ─ [RunningNorm] ─ encoder ─ core (LSTM/GRU, reset where first) ─ MLP ─ action head → π
                                                                        └ MLP ─ value head  → V

The encoder is chosen from the observation space as for the feed-forward `ActorCritic`
(`build_encoder`; `encoder_hidden=()` passes a vector observation straight to the core). By
default the critic has its own encoder and core, as sb3-contrib's RecurrentPPO
(`enable_critic_lstm`); `shared_core=True` gives actor and critic one encoder and one core.

The state is a dict of [B, H] tensors per core: ``{"actor": {"h", "c"}, "critic": {"h", "c"}}``
(GRU: only "h"; shared core: only "actor").
"""
from __future__ import annotations

import math
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Type

import gymnasium as gym
import torch
from torch import nn
from torch.distributions import Distribution

from ._errors import UnsupportedSpaceError
from .actor_critic import RunningNorm, action_layout, head_distribution
from .encoder import build_encoder
from .recurrent import RecurrentCore, episode_segments

__all__ = ["RecurrentActorCritic"]

State = Dict[str, Dict[str, torch.Tensor]]


def _mlp(in_dim: int, hidden: Sequence[int], activation: Type[nn.Module]) -> Tuple[nn.Module, int]:
    layers = []
    for size in hidden:
        layers += [nn.Linear(in_dim, int(size)), activation()]
        in_dim = int(size)
    return nn.Sequential(*layers), in_dim


def _merge(obs: Any, lead: int) -> Any:
    """Observation leaves [B, T, ...] → [B·T, ...] (`lead` = 2) — nested dicts too."""
    if isinstance(obs, Mapping):
        return {k: _merge(v, lead) for k, v in obs.items()}
    return obs.reshape((-1,) + tuple(obs.shape[lead:]))


class RecurrentActorCritic(nn.Module):
    """See the module docstring. `forward(obs [B, T, ...], state, first [B, T])` gives
    (π over [B, T], V [B, T], state after T); `step(obs [B, ...], state, first [B])` one step."""

    def __init__(self, obs_space: gym.Space, action_space: gym.Space, *,
                 encoder_hidden: Sequence[int] = (), core_hidden: int = 64, kind: str = "lstm",
                 head_hidden: Sequence[int] = (64,), activation: Type[nn.Module] = nn.ReLU,
                 shared_core: bool = False, init_log_std: float = 0.0, obs_norm: bool = False,
                 encoders: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__()
        self.discrete, self.multi, out_dim = action_layout(action_space, "RecurrentActorCritic")
        if obs_norm and not (isinstance(obs_space, gym.spaces.Box) and len(obs_space.shape) == 1):
            raise UnsupportedSpaceError(f"obs_norm needs a 1-D Box observation space, got "
                                        f"{obs_space!r}; set obs_norm=False.")
        self.obs_norm = RunningNorm(obs_space.shape) if obs_norm else None
        parts = ("actor",) if shared_core else ("actor", "critic")
        self.encoders = nn.ModuleDict(
            {p: build_encoder(obs_space, encoder_hidden, activation, encoders) for p in parts})
        self.cores = nn.ModuleDict(
            {p: RecurrentCore(self.encoders[p].out_dim, core_hidden, kind) for p in parts})
        # encoders without parameters (vectors passed as they are) all compute the same features
        self._same_features = not any(True for e in self.encoders.values() for _ in e.parameters())
        self.actor_mlp, actor_dim = _mlp(core_hidden, head_hidden, activation)
        self.critic_mlp, critic_dim = _mlp(core_hidden, head_hidden, activation)
        self.action_head = nn.Linear(actor_dim, out_dim)
        self.value_head = nn.Linear(critic_dim, 1)
        self.log_std = (None if self.discrete or self.multi is not None
                        else nn.Parameter(torch.full((out_dim,), float(init_log_std))))
        for module in (*self.encoders.values(), self.actor_mlp, self.critic_mlp):
            for layer in module.modules():
                if isinstance(layer, nn.Linear):
                    nn.init.orthogonal_(layer.weight, math.sqrt(2.0))
                    nn.init.zeros_(layer.bias)
        for head, gain in ((self.action_head, 0.01), (self.value_head, 1.0)):
            nn.init.orthogonal_(head.weight, gain)
            nn.init.zeros_(head.bias)

    def initial_state(self, n: int, device: Optional[torch.device] = None) -> State:
        return {p: core.initial_state(n, device) for p, core in self.cores.items()}

    def _cores(self, obs: Any, state: State, first: torch.Tensor, parts: Sequence[str],
               final_state: bool = True) -> Tuple[Dict[str, torch.Tensor], Optional[State]]:
        """Core outputs [B·T, H] of `parts` (steps row-major: the heads run on one flat batch,
        with no reshape in and out of each layer) and the state after T (None without
        `final_state`). Without it, the rows are cut at their episode starts once for all the
        cores (`episode_segments`), and encoders without parameters, which all compute the
        same features, run once, so the cores share one padded input."""
        if self.obs_norm is not None:
            obs = self.obs_norm(obs)
        batch, steps = first.shape
        flat = _merge(obs, 2)
        segments = None if final_state else episode_segments(first)
        outs, new_state = {}, dict(state)
        x = padded = None
        for part in parts:
            name = part if part in self.cores else "actor"
            if name in outs:
                outs[part] = outs[name]
                continue
            if x is None or not self._same_features:
                x = self.encoders[name](flat)
                padded = None
            core = self.cores[name]
            if final_state:
                out, new_state[name] = core(x.reshape(batch, steps, -1), state[name], first)
                outs[part] = out.reshape(batch * steps, -1)
            elif segments is None:  # no episode begins after t = 0: the rows in one fused call
                out = core.fused(x.reshape(batch, steps, -1), state[name], first)[0]
                outs[part] = out.reshape(batch * steps, -1)
            else:
                padded = segments.pad(x) if padded is None else padded
                outs[part] = core.over_segments(padded, state[name], segments)
            outs[name] = outs[part]
        return outs, (new_state if final_state else None)

    def _heads(self, outs: Dict[str, torch.Tensor], lead: Tuple[int, ...]
               ) -> Tuple[Distribution, torch.Tensor]:
        actor, value = self._head_outputs(outs, lead)
        return head_distribution(actor, self.discrete, self.multi, self.log_std), value

    def _head_outputs(self, outs: Dict[str, torch.Tensor], lead: Tuple[int, ...]
                      ) -> Tuple[torch.Tensor, torch.Tensor]:
        """(action head output [*lead, out_dim], V [*lead]) of flat core outputs [B·T, H]."""
        actor = self.action_head(self.actor_mlp(outs["actor"]))
        value = self.value_head(self.critic_mlp(outs["critic"]))
        return actor.reshape(*lead, -1), value.reshape(lead)

    def forward(self, obs: Any, state: State, first: torch.Tensor, *, final_state: bool = True
                ) -> Tuple[Distribution, torch.Tensor, Optional[State]]:
        """obs [B, T, ...], first [B, T] → (π [B, T], V [B, T], state after T); the state is
        None with `final_state=False`, which learning uses: resets inside the sequences then
        cost one fused core call instead of T (RecurrentCore)."""
        first = first.bool()
        outs, state = self._cores(obs, state, first, ("actor", "critic"), final_state)
        return (*self._heads(outs, tuple(first.shape)), state)

    def outputs(self, obs: Any, state: State, first: torch.Tensor
                ) -> Tuple[torch.Tensor, torch.Tensor]:
        """(the action head's output [B, T, out_dim], V [B, T]) of obs [B, T, ...] from `state`,
        first [B, T] bool: what `forward(..., final_state=False)` builds π from (logits for
        Discrete actions), without the distribution object."""
        outs, _ = self._cores(obs, state, first, ("actor", "critic"), False)
        return self._head_outputs(outs, tuple(first.shape))

    def step(self, obs: Any, state: State, first: torch.Tensor
             ) -> Tuple[Distribution, torch.Tensor, State]:
        """One step for acting: obs [B, ...], first [B] → (π [B], V [B], state)."""
        first = first.reshape(-1, 1).bool()
        outs, state = self._cores(_unsqueeze(obs), state, first, ("actor", "critic"))
        return (*self._heads(outs, (first.shape[0],)), state)

    def critic_states(self, obs: Any, state: State, first: torch.Tensor) -> Dict[str, torch.Tensor]:
        """The critic core's state after each step of obs [B, T, ...]: each key [B, T, H]."""
        name = "critic" if "critic" in self.cores else "actor"
        if self.obs_norm is not None:
            obs = self.obs_norm(obs)
        batch, steps = first.shape
        x = self.encoders[name](_merge(obs, 2)).reshape(batch, steps, -1)
        core, current, after = self.cores[name], state[name], []
        for t in range(steps):
            _, current = core.step(x[:, t], current, first[:, t].bool())
            after.append(current)
        return {k: torch.stack([s[k] for s in after], 1) for k in current}

    def value_from(self, obs: Any, critic_state: Dict[str, torch.Tensor]) -> torch.Tensor:
        """V of obs [N, ...] continuing from `critic_state` (each [N, H]), not a new episode."""
        name = "critic" if "critic" in self.cores else "actor"
        if self.obs_norm is not None:
            obs = self.obs_norm(obs)
        x = self.encoders[name](obs)
        no_reset = torch.zeros(x.shape[0], dtype=torch.bool, device=x.device)
        out, _ = self.cores[name].step(x, critic_state, no_reset)
        return self.value_head(self.critic_mlp(out)).squeeze(-1)


def _unsqueeze(obs: Any) -> Any:
    if isinstance(obs, Mapping):
        return {k: _unsqueeze(v) for k, v in obs.items()}
    return obs.unsqueeze(1)
