"""Actor-critic networks with an agent axis (IPPO / MAPPO).

Inputs are batches with an agent axis: observations [B, A, *obs_shape] (or nested dicts of
such arrays), a global state [B, *state_shape] where the env has one, and an agent mask [B, A]
(True where the agent is present). Outputs are per agent.

- Actor: the agent's observation features, with the agent id (one-hot of A) joined to them when
  `agent_id` is on, through an MLP to the action head. `share_params=True` (the default) is one
  network for all agents; False builds one network per agent (no id is then needed).
- Critic, by `critic_input`:
    "local":      V(o_i [, id_i])                     (IPPO)
    "state":      V(global_state [, id_i])            (MAPPO)
    "concat_obs": V(o_1 … o_A [, id_i]), the features of every agent's observation concatenated,
                  an absent agent's zeroed (MAPPO where the env has no global state).
- Actions: Discrete (Categorical), 1-D MultiDiscrete / MultiBinary (`models.distributions`),
  1-D Box (diagonal Gaussian, a learned state-independent log-std shared by the agents).
  The distribution covers the B·A rows (agent-major within each env row: row = b·A + i).
- `layer_norm=True` puts a LayerNorm on each network's input and after each hidden layer.
- `value_norm=True` keeps a running mean/std of the return targets (the critic learns
  normalised values; `denormalize` maps them back), Yu et al. 2022's ValueNorm.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Callable, List, Optional, Sequence, Type

import gymnasium as gym
import torch
from torch import nn
from torch.distributions import Distribution, Independent, Normal

from ._errors import UnsupportedSpaceError
from .actor_critic import RunningNorm, _init_linear
from .distributions import ActionHead, action_distribution
from .encoder import build_encoder
from .mlp import MLP

__all__ = ["CRITIC_INPUTS", "MultiAgentActorCritic", "agent_rows"]

CRITIC_INPUTS = ("local", "state", "concat_obs")


def agent_rows(x: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """`fn` applied to every leaf of a (nested) observation batch."""
    if isinstance(x, Mapping):
        return {k: agent_rows(v, fn) for k, v in x.items()}
    return fn(x)


class _PerAgent(nn.Module):
    """One module applied to every agent (`shared`) or one module per agent: inputs
    [B, A, ...] (nested dicts too) → outputs [B, A, out]."""

    def __init__(self, make: Callable[[], nn.Module], n_agents: int, shared: bool) -> None:
        super().__init__()
        self.n_agents = n_agents
        self.nets = nn.ModuleList([make() for _ in range(1 if shared else n_agents)])
        self.out_dim = int(self.nets[0].out_dim)

    def forward(self, x: Any) -> torch.Tensor:
        if len(self.nets) == 1:
            flat = agent_rows(x, lambda t: t.reshape((-1,) + tuple(t.shape[2:])))
            out = self.nets[0](flat)
            return out.reshape(-1, self.n_agents, out.shape[-1])
        return torch.stack([net(agent_rows(x, lambda t, i=i: t[:, i]))
                            for i, net in enumerate(self.nets)], 1)


class _Head(nn.Module):
    """MLP(hidden, activated) then a linear output layer, as one module with `out_dim`.
    `layer_norm`: a LayerNorm on the input and after every hidden activation (Yu et al.'s
    feature normalisation and layer norms)."""

    def __init__(self, in_dim: int, hidden: Sequence[int], activation: Type[nn.Module],
                 out_dim: int, gain: float, layer_norm: bool = False) -> None:
        super().__init__()
        self.body: Optional[nn.Module] = None
        if layer_norm:
            layers: List[nn.Module] = [nn.LayerNorm(in_dim)]
            for a, b in zip((in_dim,) + tuple(hidden[:-1]), hidden):
                layers += [nn.Linear(a, b), activation(), nn.LayerNorm(b)]
            self.body = nn.Sequential(*layers)
        elif hidden:
            self.body = MLP(in_dim, hidden[-1], hidden[:-1], activation, activate_output=True)
        self.out = nn.Linear(hidden[-1] if hidden else in_dim, out_dim)
        for module in self.modules():
            if isinstance(module, nn.Linear):
                _init_linear(module, math.sqrt(2.0))
        _init_linear(self.out, gain)
        self.out_dim = out_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.body(x) if self.body is not None else x)


class MultiAgentActorCritic(nn.Module):
    """An actor and a critic over an agent axis (see the module docstring)."""

    def __init__(self, obs_space: gym.Space, action_space: gym.Space, n_agents: int,
                 hidden: Sequence[int] = (64, 64), activation: Type[nn.Module] = nn.ReLU, *,
                 critic_input: str = "local", state_space: Optional[gym.Space] = None,
                 agent_id: bool = True, share_params: bool = True, init_log_std: float = 0.0,
                 value_norm: bool = False, layer_norm: bool = False) -> None:
        super().__init__()
        if critic_input not in CRITIC_INPUTS:
            raise ValueError(f"MultiAgentActorCritic: critic_input must be one of {CRITIC_INPUTS},"
                             f" got {critic_input!r}")
        if critic_input == "state" and state_space is None:
            raise ValueError("MultiAgentActorCritic: critic_input='state' needs the env's "
                             "state_space (this env has no global state); use 'concat_obs'")
        if n_agents < 1:
            raise ValueError(f"MultiAgentActorCritic: n_agents must be >= 1, got {n_agents}")
        A = self.n_agents = int(n_agents)
        self.critic_input = critic_input
        # read by a policy given this network (DI-engine's `Policy(cfg, model=model)`)
        self.obs_space, self.action_space, self.state_space = obs_space, action_space, state_space
        self.head: Optional[ActionHead] = None  # logits head (Discrete / Multi*), else Gaussian
        if isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1:
            out_dim = int(action_space.shape[0])
        elif isinstance(action_space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete,
                                       gym.spaces.MultiBinary)):
            self.head = action_distribution(action_space)
            out_dim = self.head.size
        else:
            raise UnsupportedSpaceError(
                f"MultiAgentActorCritic acts in Discrete, 1-D MultiDiscrete, 1-D MultiBinary or "
                f"1-D Box spaces, got {action_space!r}; flatten it with an action wrapper.")
        self.discrete = isinstance(action_space, gym.spaces.Discrete)
        # an id is only needed where agents share a network
        self.id_dim = A if (agent_id and share_params) else 0
        self.register_buffer("ids", torch.eye(A), persistent=False)
        hidden = tuple(int(h) for h in hidden)

        def features() -> nn.Module:  # the observation's raw features (no MLP: hidden=())
            return build_encoder(obs_space, (), activation)
        self.actor_features = _PerAgent(features, A, share_params)
        feat = self.actor_features.out_dim
        self.actor = _PerAgent(lambda: _Head(feat + self.id_dim, hidden, activation, out_dim,
                                             0.01, layer_norm), A, share_params)
        if critic_input == "state":
            assert state_space is not None
            critic_in = int(math.prod(state_space.shape))
        else:
            self.critic_features = _PerAgent(features, A, share_params)
            critic_in = feat * (A if critic_input == "concat_obs" else 1)
        self.critic = _PerAgent(lambda: _Head(critic_in + self.id_dim, hidden, activation, 1,
                                              1.0, layer_norm), A, share_params)
        self.log_std = (nn.Parameter(torch.full((out_dim,), float(init_log_std)))
                        if self.head is None else None)
        self.value_norm = RunningNorm((), clip=1e9) if value_norm else None

    # --- actor -------------------------------------------------------------------------------
    def _with_id(self, x: torch.Tensor) -> torch.Tensor:
        if not self.id_dim:
            return x
        return torch.cat([x, self.ids.to(x.dtype).expand(x.shape[0], -1, -1)], -1)

    def logits(self, obs: Any) -> torch.Tensor:
        """The actor's outputs [B, A, out] (logits, or the Gaussian's means)."""
        return self.actor(self._with_id(self.actor_features(obs)))

    def _dist(self, out: torch.Tensor) -> Distribution:
        out = out.reshape(-1, out.shape[-1])  # rows b·A + i
        if self.head is not None:
            return self.head.build(out)
        std = self.log_std.exp().expand_as(out)
        return Independent(Normal(out, std, validate_args=False), 1, validate_args=False)

    def dist(self, obs: Any) -> Distribution:
        """The action distribution over the B·A rows (row = b·A + i)."""
        return self._dist(self.logits(obs))

    def mode(self, obs: Any) -> torch.Tensor:
        """The most likely action per agent: [B, A] (Discrete) or [B, A, k]."""
        out = self.logits(obs)
        if self.head is None:
            return out
        return self.head.mode(out)

    # --- critic ------------------------------------------------------------------------------
    def value(self, obs: Any, global_state: Optional[torch.Tensor] = None,
              agent_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        """The critic's (normalised, with value_norm) V per agent, [B, A]."""
        return self.critic(self._critic_input(obs, global_state, agent_mask)).squeeze(-1)

    def _critic_input(self, obs: Any, global_state: Optional[torch.Tensor],
                      agent_mask: Optional[torch.Tensor]) -> torch.Tensor:
        A = self.n_agents
        if self.critic_input == "state":
            if global_state is None:
                raise ValueError("MultiAgentActorCritic.value: this critic reads the global "
                                 "state (critic_input='state') but global_state is None; the "
                                 "env manager's global_state must be passed")
            s = global_state.reshape(global_state.shape[0], 1, -1).float()
            x = s.expand(-1, A, -1)
        else:
            x = self.critic_features(obs)
            if self.critic_input == "concat_obs":
                if agent_mask is not None:  # an absent agent's observation is not an input
                    keep = agent_mask.to(x.device).reshape(x.shape[0], A, 1).bool()
                    x = torch.where(keep, x, torch.zeros((), dtype=x.dtype, device=x.device))
                x = x.reshape(x.shape[0], 1, -1).expand(-1, A, -1)
        return self._with_id(x)

    def denormalize(self, v: torch.Tensor) -> torch.Tensor:
        """Critic outputs → values in return units (identity without value_norm)."""
        if self.value_norm is None:
            return v
        norm = self.value_norm
        return (v * torch.sqrt(norm.var + norm.eps) + norm.mean).to(v.dtype)

    def normalize(self, v: torch.Tensor) -> torch.Tensor:
        """Values in return units → the critic's units (identity without value_norm)."""
        return v if self.value_norm is None else self.value_norm(v)

    def forward(self, obs: Any, global_state: Optional[torch.Tensor] = None,
                agent_mask: Optional[torch.Tensor] = None) -> tuple:
        """(distribution over B·A rows, critic output [B, A])."""
        return self.heads(*self.inputs(obs, global_state, agent_mask))

    # --- inputs and heads apart: a learner may make the inputs once for many updates ----------
    @property
    def fixed_inputs(self) -> bool:
        """True when `inputs` holds no parameters (the features are the observation itself, as
        for 1-D Box observations), so what it returns for a batch stays the same while the
        networks train."""
        features = [self.actor_features] + ([self.critic_features]
                                            if self.critic_input != "state" else [])
        return not any(True for f in features for _ in f.parameters())

    def inputs(self, obs: Any, global_state: Optional[torch.Tensor] = None,
               agent_mask: Optional[torch.Tensor] = None) -> tuple:
        """(actor input, critic input), each [B, A, ·]: the features the actor and the critic
        read, agent ids joined; `heads` maps them to what `forward` returns."""
        return (self._with_id(self.actor_features(obs)),
                self._critic_input(obs, global_state, agent_mask))

    def heads(self, actor_input: torch.Tensor, critic_input: torch.Tensor) -> tuple:
        """(distribution over B·A rows, critic output [B, A]) from `inputs`' two tensors."""
        return self._dist(self.actor(actor_input)), self.critic(critic_input).squeeze(-1)

    def actor_parameters(self) -> List[nn.Parameter]:
        params = list(self.actor_features.parameters()) + list(self.actor.parameters())
        return params + ([self.log_std] if self.log_std is not None else [])

    def critic_parameters(self) -> List[nn.Parameter]:
        mine = {id(p) for p in self.actor_parameters()}
        return [p for p in self.parameters() if id(p) not in mine]
