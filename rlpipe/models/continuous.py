"""Networks for continuous control: a squashed Gaussian actor (SAC), a deterministic actor (TD3),
a Gaussian actor with a bounded mean (BC, IQL) and a twin Q critic.

Actors act in the normalised box [-1, 1]^action_dim; the policy maps that box onto the env's
bounds. Critics take normalised actions too.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence, Tuple

import gymnasium as gym
import torch
import torch.nn.functional as F
from torch import nn

from .encoder import build_encoder
from .mlp import MLP

_LOG_2 = math.log(2.0)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _check_action_dim(action_dim: int) -> int:
    if int(action_dim) < 1:
        raise ValueError(f"action_dim must be >= 1, got {action_dim}.")
    return int(action_dim)


class SquashedGaussianActor(nn.Module):
    """obs → a tanh-squashed Gaussian over [-1, 1]^action_dim.

    ``forward(obs) -> (mean, log_std)`` of the Gaussian before the tanh; log_std is squashed
    smoothly into [log_std_min, log_std_max]. ``sample(obs)`` draws a reparameterised action
    a = tanh(mean + std · ε) and its log-density, corrected for the tanh:
    log π(a) = log N(u; mean, std) − Σ log(1 − tanh(u)²).
    """

    def __init__(self, obs_space: gym.Space, action_dim: int, hidden: Sequence[int] = (256, 256),
                 log_std_min: float = -5.0, log_std_max: float = 2.0,
                 encoders: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        if not log_std_min < log_std_max:
            raise ValueError(f"log_std_min ({log_std_min}) must be < log_std_max ({log_std_max}).")
        self.action_dim = _check_action_dim(action_dim)
        self.encoder = build_encoder(obs_space, hidden, encoders=encoders)
        self.mean_head = nn.Linear(self.encoder.out_dim, self.action_dim)
        self.log_std_head = nn.Linear(self.encoder.out_dim, self.action_dim)
        self.log_std_min = float(log_std_min)
        self.log_std_max = float(log_std_max)

    def forward(self, obs: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        features = self.encoder(obs)
        log_std = torch.tanh(self.log_std_head(features))
        log_std = self.log_std_min + 0.5 * (self.log_std_max - self.log_std_min) * (log_std + 1.0)
        return self.mean_head(features), log_std

    def sample(self, obs: torch.Tensor, generator: torch.Generator | None = None,
               noise: torch.Tensor | None = None, repeats: int = 1
               ) -> Tuple[torch.Tensor, torch.Tensor]:
        """(action in [-1, 1] [B, A], log π(action) [B]); differentiable in the weights.
        `noise`: the N(0, 1) draws ε [B, A] to use, made beforehand (a compiled learn step
        draws none itself); else they are drawn from `generator`. `repeats` = n draws n actions
        per state, rows [B·n, A] in the order of `obs.repeat_interleave(n)`: the network runs
        once per state and its Gaussian is repeated, not its input."""
        mean, log_std = self(obs)
        if repeats > 1:
            mean, log_std = mean.repeat_interleave(repeats, 0), log_std.repeat_interleave(repeats, 0)
        if noise is None:
            noise = torch.randn(mean.shape, generator=generator, device=mean.device,
                                dtype=mean.dtype)
        u = mean + log_std.exp() * noise
        log_prob = (-0.5 * noise.pow(2) - log_std - _HALF_LOG_2PI).sum(-1)
        # log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)), stable for large |u|
        log_prob = log_prob - (2.0 * (_LOG_2 - u - F.softplus(-2.0 * u))).sum(-1)
        return torch.tanh(u), log_prob

    def log_prob(self, obs: torch.Tensor, action: torch.Tensor, eps: float = 1e-4) -> torch.Tensor:
        """log π(action|obs) [B] of given actions in [-1, 1] [B, A] (e.g. a data set's, for a
        behaviour-cloning loss); actions are clipped to ±(1 − eps) so that atanh stays finite."""
        mean, log_std = self(obs)
        a = action.clamp(-1.0 + eps, 1.0 - eps)
        u = torch.atanh(a)
        noise = (u - mean) / log_std.exp()
        log_prob = (-0.5 * noise.pow(2) - log_std - _HALF_LOG_2PI).sum(-1)
        return log_prob - torch.log1p(-a.pow(2)).sum(-1)

    def deterministic(self, obs: torch.Tensor) -> torch.Tensor:
        """tanh(mean): the action evaluation uses."""
        return torch.tanh(self(obs)[0])


class DeterministicActor(nn.Module):
    """obs → an action in [-1, 1]^action_dim (tanh output), as in DDPG/TD3."""

    def __init__(self, obs_space: gym.Space, action_dim: int,
                 hidden: Sequence[int] = (256, 256),
                 encoders: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.action_dim = _check_action_dim(action_dim)
        self.encoder = build_encoder(obs_space, hidden, encoders=encoders)
        self.head = nn.Linear(self.encoder.out_dim, self.action_dim)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.head(self.encoder(obs)))


class GaussianActor(nn.Module):
    """obs → N(tanh(mean(s)), diag(exp(log_std))) over [-1, 1]^action_dim, with one learned
    log std per action dimension (not a function of the state), clamped to
    [log_std_min, log_std_max] — the actor IQL uses for locomotion.

    The Gaussian is not squashed: ``log_prob(obs, action)`` scores data actions (which lie in
    the box) under the plain Gaussian, and ``sample`` clips its draws to the box. This avoids the
    atanh of data actions on the boundary that a tanh-squashed density would need.
    """

    def __init__(self, obs_space: gym.Space, action_dim: int, hidden: Sequence[int] = (256, 256),
                 log_std_min: float = -5.0, log_std_max: float = 2.0,
                 encoders: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        if not log_std_min < log_std_max:
            raise ValueError(f"log_std_min ({log_std_min}) must be < log_std_max ({log_std_max}).")
        self.action_dim = _check_action_dim(action_dim)
        self.encoder = build_encoder(obs_space, hidden, encoders=encoders)
        self.mean_head = nn.Linear(self.encoder.out_dim, self.action_dim)
        self.log_std = nn.Parameter(torch.zeros(self.action_dim))
        self.log_std_min = float(log_std_min)
        self.log_std_max = float(log_std_max)

    def forward(self, obs: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """(mean in [-1, 1] [B, A], log std [A])."""
        mean = torch.tanh(self.mean_head(self.encoder(obs)))
        return mean, self.log_std.clamp(self.log_std_min, self.log_std_max)

    def log_prob(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """log N(action; mean(obs), std) summed over action dimensions: [B]."""
        mean, log_std = self(obs)
        z = (action - mean) * torch.exp(-log_std)
        return (-0.5 * z.pow(2) - log_std - _HALF_LOG_2PI).sum(-1)

    def sample(self, obs: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """A draw of the Gaussian, clipped to [-1, 1]: [B, A]."""
        mean, log_std = self(obs)
        noise = torch.randn(mean.shape, generator=generator, device=mean.device, dtype=mean.dtype)
        return (mean + log_std.exp() * noise).clamp(-1.0, 1.0)

    def deterministic(self, obs: torch.Tensor) -> torch.Tensor:
        """The mean: the action evaluation uses."""
        return self(obs)[0]


class TwinQCritic(nn.Module):
    """Two independent Q networks: ``forward(obs, action) -> (q1, q2)``, each [B].

    Each Q is an MLP over [obs features, action]; vector observations are used as they are,
    image observations pass through a conv trunk (one per Q).
    """

    def __init__(self, obs_space: gym.Space, action_dim: int,
                 hidden: Sequence[int] = (256, 256),
                 encoders: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.action_dim = _check_action_dim(action_dim)
        self.obs_encoders = nn.ModuleList(build_encoder(obs_space, (), encoders=encoders)
                                          for _ in range(2))
        self.q_nets = nn.ModuleList(
            MLP(enc.out_dim + self.action_dim, 1, hidden) for enc in self.obs_encoders)

    def _q(self, i: int, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        x = torch.cat([self.obs_encoders[i](obs), action.float()], dim=-1)
        return self.q_nets[i](x).squeeze(-1)

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return self._q(0, obs, action), self._q(1, obs, action)

    def q1(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """The first Q alone (TD3's actor loss)."""
        return self._q(0, obs, action)


class ContinuousQAC(nn.Module):
    """An actor and a twin Q critic in one module (DI-engine's `ContinuousQAC`): `actor` is a
    `SquashedGaussianActor` for `kind="reparameterization"` (SAC) or a `DeterministicActor` for
    `kind="regression"` (TD3), `critic` a `TwinQCritic`; `**cfg.policy.model` of SAC or TD3
    fills the rest. It records `obs_space` and
    `action_space`, so `SACPolicy(cfg, model=ContinuousQAC(...))` takes its spaces from it."""

    KINDS = {"reparameterization": SquashedGaussianActor, "regression": DeterministicActor}

    def __init__(self, obs_space: gym.Space, action_space: gym.Space,
                 kind: str = "reparameterization", actor_hidden: Sequence[int] = (256, 256),
                 critic_hidden: Sequence[int] = (256, 256), log_std_min: float = -5.0,
                 log_std_max: float = 2.0, encoders: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        if kind not in self.KINDS:
            raise ValueError(f"ContinuousQAC(kind={kind!r}): choose 'reparameterization' (SAC's "
                             f"squashed Gaussian actor) or 'regression' (TD3's deterministic actor)")
        if not isinstance(action_space, gym.spaces.Box) or len(action_space.shape) != 1:
            raise ValueError(f"ContinuousQAC: action_space must be a 1-D Box, got {action_space}")
        self.obs_space, self.action_space = obs_space, action_space
        dim = int(action_space.shape[0])
        if kind == "reparameterization":
            self.actor = SquashedGaussianActor(obs_space, dim, actor_hidden, log_std_min,
                                               log_std_max, encoders=encoders)
        else:  # the log-std bounds belong to the Gaussian actor alone
            self.actor = DeterministicActor(obs_space, dim, actor_hidden, encoders=encoders)
        self.critic = TwinQCritic(obs_space, dim, critic_hidden, encoders=encoders)
