"""Action distributions over logits, chosen from the action space (PPO's actor heads).

`action_distribution(space)` gives an `ActionHead`: how many logits the actor's last layer must
output (`size`), `build(logits) -> Distribution` and `mode(logits) -> action` (greedy action).
Actions are in units of the network (a Discrete(n, start=s) action `a` is index `a − s`, a
MultiDiscrete part likewise relative to its start).

- Discrete(n): a Categorical over n logits.
- MultiDiscrete(nvec) (1-D nvec): one Categorical per component over its nvec[i] logits;
  log_prob(a) = Σ_i log p_i(a_i), entropy = Σ_i H[p_i] (the components are independent).
- MultiBinary(n) (1-D): one Bernoulli per component, p_i = sigmoid(logit_i); log-prob and
  entropy summed over the n components. Mode: logit > 0.

Box actions are not here: their Gaussian needs the actor's learned log-std (models/actor_critic.py).
Each distribution has `sample_with(generator)` so a policy can sample from its own seeded RNG.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List

import gymnasium as gym
import torch
from torch.distributions import Bernoulli, Categorical, Distribution

from ._errors import UnsupportedSpaceError

__all__ = ["ActionHead", "MultiBernoulli", "MultiCategorical", "action_distribution",
           "categorical_entropy", "categorical_log_prob", "sample_categorical"]


def categorical_log_prob(log_pi: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    """log π(a) of each row from its log-probabilities `log_pi` [B, n] (log_softmax of the
    logits) and the action indices [B] → [B]; Categorical.log_prob without the object."""
    return log_pi.gather(-1, action.unsqueeze(-1)).squeeze(-1)


def categorical_entropy(log_pi: torch.Tensor) -> torch.Tensor:
    """−Σ π log π of each row of log-probabilities `log_pi` [..., n] → [...]. A masked action
    (log-probability about −1e8, probability 0) adds 0, never NaN."""
    return -(log_pi.exp() * log_pi).sum(-1)


def sample_categorical(dist: Categorical, generator: torch.Generator) -> torch.Tensor:
    """One index per row of a Categorical [B, n], drawn with `generator` → [B] (int64)."""
    return torch.multinomial(dist.probs, 1, generator=generator).squeeze(1)


class MultiCategorical(Distribution):
    """Independent Categoricals over the split of `logits` [B, Σ nvec]; actions are [B, k]."""

    arg_constraints: dict = {}

    def __init__(self, logits: torch.Tensor, nvec: List[int]) -> None:
        self.parts = [Categorical(logits=part, validate_args=False)
                      for part in torch.split(logits, nvec, dim=-1)]
        super().__init__(batch_shape=logits.shape[:-1], validate_args=False)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        value = value.long()
        return torch.stack([p.log_prob(value[..., i]) for i, p in enumerate(self.parts)],
                           -1).sum(-1)

    def entropy(self) -> torch.Tensor:
        return torch.stack([p.entropy() for p in self.parts], -1).sum(-1)

    def sample(self, sample_shape: torch.Size = torch.Size()) -> torch.Tensor:
        return torch.stack([p.sample(sample_shape) for p in self.parts], -1)

    def sample_with(self, generator: torch.Generator) -> torch.Tensor:
        """One action [B, k] (int64) drawn with `generator`."""
        return torch.stack([sample_categorical(p, generator) for p in self.parts], -1)

    @property
    def mode(self) -> torch.Tensor:
        return torch.stack([p.logits.argmax(-1) for p in self.parts], -1)


class MultiBernoulli(Distribution):
    """Independent Bernoullis, one per logit of `logits` [B, n]; actions are [B, n] in {0, 1}."""

    arg_constraints: dict = {}

    def __init__(self, logits: torch.Tensor) -> None:
        self.base = Bernoulli(logits=logits, validate_args=False)
        super().__init__(batch_shape=logits.shape[:-1], validate_args=False)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        return self.base.log_prob(value.to(self.base.logits.dtype)).sum(-1)

    def entropy(self) -> torch.Tensor:
        return self.base.entropy().sum(-1)

    def sample(self, sample_shape: torch.Size = torch.Size()) -> torch.Tensor:
        return self.base.sample(sample_shape)

    def sample_with(self, generator: torch.Generator) -> torch.Tensor:
        """One action [B, n] (0./1. floats) drawn with `generator`."""
        probs = self.base.probs
        u = torch.rand(probs.shape, generator=generator, device=probs.device)
        return (u < probs).to(probs.dtype)

    @property
    def mode(self) -> torch.Tensor:
        return (self.base.logits > 0).to(self.base.logits.dtype)


@dataclass(frozen=True)
class ActionHead:
    """What an actor needs for one action space: `size` logits, `build(logits)` the
    distribution, `mode(logits)` the most likely action (in network units)."""

    size: int
    build: Callable[[torch.Tensor], Distribution]
    mode: Callable[[torch.Tensor], torch.Tensor]


def _one_dim(space: gym.Space, what: str) -> None:
    if len(space.shape) != 1:
        raise UnsupportedSpaceError(
            f"{what} actions must be 1-D, got {' '.join(repr(space).split())}; flatten the "
            "action space with an action wrapper (e.g. reshape the nvec / n to one dimension).")


def action_distribution(space: gym.Space) -> ActionHead:
    """The logits-only action head for a Discrete, MultiDiscrete or MultiBinary space.

    Raises `UnsupportedSpaceError` for any other space (Box needs a Gaussian with a learned
    log-std, which the actor-critic builds itself).
    """
    if isinstance(space, gym.spaces.Discrete):
        return ActionHead(int(space.n),
                          lambda logits: Categorical(logits=logits, validate_args=False),
                          lambda logits: logits.argmax(-1))
    if isinstance(space, gym.spaces.MultiDiscrete):
        _one_dim(space, "MultiDiscrete")
        nvec = [int(n) for n in space.nvec]
        return ActionHead(sum(nvec), lambda logits: MultiCategorical(logits, nvec),
                          lambda logits: MultiCategorical(logits, nvec).mode)
    if isinstance(space, gym.spaces.MultiBinary):
        _one_dim(space, "MultiBinary")
        return ActionHead(int(space.shape[0]), MultiBernoulli,
                          lambda logits: (logits > 0).to(logits.dtype))
    raise UnsupportedSpaceError(
        f"no logits action distribution for {space!r}: Discrete, MultiDiscrete and MultiBinary "
        "have one (Box actions get a Gaussian from the actor-critic).")
