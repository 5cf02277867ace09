"""Actor-critic networks for policy-gradient methods (PPO), and a running observation normaliser."""
from __future__ import annotations

import copy
import math
from typing import Any, Mapping, Sequence, Tuple, Type

import gymnasium as gym
import torch
from torch import nn
from torch.distributions import Categorical, Distribution, Independent, Normal

from rlpipe.data_parallel import get_world_size, pooled_moments

from ._errors import UnsupportedSpaceError
from .distributions import ActionHead, action_distribution
from .encoder import GivenEncoder, build_encoder, shares_features
from .mlp import apply_layer


class RunningNorm(nn.Module):
    """Normalises observations with a running mean and variance: clip((x − mean) / std, ±clip).

    The statistics are buffers (saved in `state_dict`, copied by a hard update) and change only
    when `update(batch)` is called (Chan et al.'s parallel mean/variance update), so every
    forward between two updates uses the same statistics.
    """

    def __init__(self, shape: Sequence[int], clip: float = 10.0, eps: float = 1e-8) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(tuple(shape), dtype=torch.float64))
        self.register_buffer("var", torch.ones(tuple(shape), dtype=torch.float64))
        self.register_buffer("count", torch.tensor(eps, dtype=torch.float64))
        self.clip = float(clip)
        self.eps = float(eps)

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Fold a batch [B, *shape] into the statistics."""
        x = x.to(self.mean.device, torch.float64).reshape(-1, *self.mean.shape)
        n = x.shape[0]
        if n == 0 and get_world_size() == 1:
            return
        batch_mean = x.mean(0)
        batch_var = x.var(0, unbiased=False)
        # in a data-parallel run, the rows of every rank: the statistics stay equal across ranks
        n, batch_mean, batch_var = pooled_moments(n, batch_mean, batch_var)
        if n == 0:
            return
        total = self.count + n
        delta = batch_mean - self.mean
        self.mean += delta * (n / total)
        self.var.copy_((self.var * self.count + batch_var * n + delta**2 * self.count * n / total)
                       / total)
        self.count.copy_(total)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        std = torch.sqrt(self.var + self.eps).to(torch.float32)
        return ((x.float() - self.mean.to(torch.float32)) / std).clamp(-self.clip, self.clip)


def _init_linear(layer: nn.Linear, gain: float) -> None:
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)


def action_layout(action_space: gym.Space, who: str) -> Tuple[bool, "ActionHead | None", int]:
    """(discrete, multi head or None, size of the action head's output) of an actor's action
    space: Discrete(n), 1-D MultiDiscrete / MultiBinary, or 1-D Box."""
    if isinstance(action_space, gym.spaces.Discrete):
        return True, None, int(action_space.n)
    if isinstance(action_space, (gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)):
        multi = action_distribution(action_space)
        return False, multi, multi.size
    if isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1:
        return False, None, int(action_space.shape[0])
    raise UnsupportedSpaceError(
        f"{who} supports Discrete, 1-D MultiDiscrete, 1-D MultiBinary and 1-D Box "
        f"actions, got {action_space!r}; reshape a multi-dimensional action space to 1-D "
        "(or flatten a Dict/Tuple one) with an action wrapper.")


def head_distribution(out: torch.Tensor, discrete: bool, multi: "ActionHead | None",
                      log_std: "torch.Tensor | None") -> Distribution:
    """The action distribution of an action head's output (any leading axes): Categorical,
    the multi head's, or a diagonal Gaussian with the state-independent `log_std`."""
    if discrete:
        return Categorical(logits=out, validate_args=False)
    if multi is not None:
        return multi.build(out)
    std = log_std.exp().expand_as(out)
    return Independent(Normal(out, std, validate_args=False), 1, validate_args=False)


class ActorCritic(nn.Module):
    """An actor (action distribution) and a critic (state value) over one observation space.

    - Discrete(n) actions: a Categorical over n logits.
    - MultiDiscrete / MultiBinary actions (1-D): one Categorical / Bernoulli per component
      (`models.distributions`), log-prob and entropy summed over the components.
    - Box actions (1-D): a diagonal Gaussian whose mean comes from the network and whose
      log-std is one learned parameter per action dimension (state-independent),
      starting at `init_log_std`.
    - The actor and critic have their own encoders (`build_encoder(obs_space, hidden)`), or share
      one when `share_encoder=True` (sensible for images).
    - `obs_norm=True` puts a `RunningNorm` in front of the encoders (vector observations only);
      call `obs_norm.update(batch)` to move its statistics.
    - `encoder=` a network of your own (DI-engine's `VAC(encoder=...)`) replaces the encoder
      built from the space (`GivenEncoder`: it gets the batch nested as the space is, and the
      `hidden` layers follow it); the critic shares it with `share_encoder=True` (DI-engine's
      default), else gets a copy. Its own layers keep their initialisation.
    - Orthogonal initialisation (gain √2 in the hidden layers, 0.01 on the action head,
      1 on the value head), as is usual for PPO.

    Actions are in units of the network: a Discrete(n, start=s) action `a` is index `a − s`,
    and Gaussian samples are not clipped here (the policy clips what it sends to the env).
    """

    def __init__(self, obs_space: gym.Space, action_space: gym.Space,
                 hidden: Sequence[int] = (64, 64), activation: Type[nn.Module] = nn.Tanh,
                 *, share_encoder: bool = False, init_log_std: float = 0.0,
                 obs_norm: bool = False, encoders: Mapping[str, Any] | None = None,
                 encoder: nn.Module | None = None) -> None:
        super().__init__()
        self.obs_space, self.action_space = obs_space, action_space  # read by a policy given it
        # MultiDiscrete / MultiBinary: the head of models.distributions (None otherwise)
        self.discrete, self.multi, out_dim = action_layout(action_space, "ActorCritic")
        is_vector = isinstance(obs_space, gym.spaces.Box) and len(obs_space.shape) == 1
        if obs_norm and not is_vector:
            raise UnsupportedSpaceError(
                f"obs_norm needs a 1-D Box observation space, got {obs_space!r}; images are "
                "already scaled to [0, 1] — set obs_norm=False.")
        if encoder is not None and encoders:
            raise ValueError("ActorCritic: give encoder= (your network for the whole "
                             "observation) or encoders= (kinds per part), not both")
        self.obs_norm = RunningNorm(obs_space.shape) if obs_norm else None
        if encoder is not None:
            self.actor_encoder = GivenEncoder(obs_space, encoder, hidden, activation)
            self.critic_encoder = (None if share_encoder else
                                   GivenEncoder(obs_space, copy.deepcopy(encoder), hidden,
                                                activation))
        else:
            self.actor_encoder = build_encoder(obs_space, hidden, activation, encoders)
            self.critic_encoder = (None if share_encoder
                                   else build_encoder(obs_space, hidden, activation, encoders))
        self.action_head = nn.Linear(self.actor_encoder.out_dim, out_dim)
        self.value_head = nn.Linear(self.actor_encoder.out_dim, 1)
        self.log_std = (None if self.discrete or self.multi is not None
                        else nn.Parameter(torch.full((out_dim,), float(init_log_std))))
        given = {id(m) for e in (self.actor_encoder, self.critic_encoder)
                 if isinstance(e, GivenEncoder) for m in e.module.modules()}
        for module in self.modules():
            if isinstance(module, nn.Linear) and id(module) not in given:
                _init_linear(module, math.sqrt(2.0))
        _init_linear(self.action_head, 0.01)
        _init_linear(self.value_head, 1.0)
        # separate encoders whose input stages hold no weights (parts read flat or one-hot):
        # their MLPs read the same features, computed once per batch
        self.shared_features = (self.critic_encoder is not None
                                and shares_features(self.actor_encoder, self.critic_encoder))

    def _features(self, obs: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        # the encoders' and heads' forward are called directly, not through Module.__call__,
        # and the submodules are read from `_modules` rather than through Module.__getattr__:
        # this runs once per env step while acting, where that overhead outweighs a small
        # network's arithmetic (hooks on those submodules are not run; hooks on self are)
        if self.obs_norm is not None:
            obs = self.obs_norm(obs)
        modules = self._modules
        # (a shared encoder leaves critic_encoder None: a plain attribute, not in `_modules`)
        actor_encoder, critic_encoder = modules["actor_encoder"], modules.get("critic_encoder")
        if self.shared_features:
            x = actor_encoder.features(obs)
            return actor_encoder.head(x), critic_encoder.head(x)
        actor = actor_encoder.forward(obs)
        critic = actor if critic_encoder is None else critic_encoder.forward(obs)
        return actor, critic

    def _dist(self, features: torch.Tensor) -> Distribution:
        return head_distribution(self.action_head(features), self.discrete, self.multi,
                                 self.log_std)

    def forward(self, obs: torch.Tensor) -> Tuple[Distribution, torch.Tensor]:
        """(action distribution, value [B]) for a batch of observations."""
        out, value = self.outputs(obs)
        return head_distribution(out, self.discrete, self.multi, self.log_std), value

    def outputs(self, obs: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """(the action head's output [B, out_dim], value [B]): what `forward` builds its
        distribution from (logits for Discrete actions, the Gaussian's mean for Box ones)."""
        actor, critic = self._features(obs)
        modules = self._modules
        return (apply_layer(modules["action_head"], actor),
                apply_layer(modules["value_head"], critic).squeeze(-1))

    def fixed_features(self, obs: Any) -> "torch.Tensor | None":
        """The actor's and the critic's common MLP input for a batch [B, F], when computing it
        takes no weight (separate encoders whose parts are read flat or one-hot:
        `shared_features`; the observation normaliser, if any, as its statistics stand), else
        None. A learner computes it once per batch and gives rows of it to `head_outputs`, in
        place of `outputs` recomputing it for every minibatch (the same values: the input stage
        works row by row)."""
        if not self.shared_features:
            return None
        if self.obs_norm is not None:
            obs = self.obs_norm(obs)
        return self.actor_encoder.features(obs)

    def head_outputs(self, features: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """`outputs` of the observations whose `fixed_features` are `features`."""
        if not self.shared_features:
            raise ValueError("ActorCritic.head_outputs: this network's encoders hold weights "
                             "before their MLPs (or are one shared encoder), so it has no "
                             "fixed_features; call outputs(obs)")
        modules = self._modules
        return (apply_layer(modules["action_head"], modules["actor_encoder"].head(features)),
                apply_layer(modules["value_head"],
                            modules["critic_encoder"].head(features)).squeeze(-1))

    def dist(self, obs: torch.Tensor) -> Distribution:
        """The action distribution alone (`log_prob`/`entropy` are summed over action dims)."""
        if self.obs_norm is not None:
            obs = self.obs_norm(obs)
        return self._dist(self.actor_encoder(obs))

    def mode(self, obs: torch.Tensor) -> torch.Tensor:
        """The most likely action, without building the distribution (greedy evaluation): the
        argmax of the logits (discrete, [B]), per component for MultiDiscrete ([B, k]),
        logits > 0 for MultiBinary ([B, n], 0./1.), or the Gaussian's mean ([B, action dims])."""
        if self.obs_norm is not None:
            obs = self.obs_norm(obs)
        out = self.action_head(self.actor_encoder(obs))
        if self.multi is not None:
            return self.multi.mode(out)
        return out.argmax(-1) if self.discrete else out

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """The state value V(obs), shape [B]."""
        if self.obs_norm is not None:
            obs = self.obs_norm(obs)
        encoder = self.actor_encoder if self.critic_encoder is None else self.critic_encoder
        return self.value_head(encoder(obs)).squeeze(-1)
