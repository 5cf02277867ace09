"""The acting face of a trained policy as one torch module, for `rlpipe export`.

`acting_module(policy, with_mask)` gives an `ActingModule`: ``forward(*inputs) -> action``, its
inputs one tensor per observation part (`InputSpec`, in `input_specs` order) and, when
`with_mask`, an ``action_mask`` last. It computes what ``policy.eval_mode.forward`` returns, in
torch ops only (no numpy, no rlpipe at run time), so that it traces to ONNX or TorchScript:

- DQN and discrete CQL: argmax of Q over the valid actions, plus the space's start;
- PPO: the mode of π: argmax of the logits (Discrete; per component for MultiDiscrete, each
  masked by its segment), logits > 0 (MultiBinary), the Gaussian's mean clipped to the Box
  (its running observation normaliser included);
- SAC, CQL: tanh(mean); TD3: μ(s); IQL: its greedy actor; TD3+BC: μ of the normalised
  observation; all scaled from [-1, 1] onto the Box bounds and clipped, as `BoxActions.to_env`;
- BC: argmax of its logits, or its deterministic actor scaled onto the Box.

Recurrent and multi-agent policies are refused (`ExportError`, one line).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from rlpipe.policies import BCPolicy, DQNPolicy, PPOPolicy
from rlpipe.policies._twin_critic import TwinCriticPolicy
from rlpipe.policies._masks import MASKED_LOGIT

MASK_INPUT = "action_mask"
OBS_INPUT = "obs"


class ExportError(ValueError):
    """A policy or run that cannot be exported, or an export whose check failed."""


@dataclass(frozen=True)
class InputSpec:
    """One input of the exported file: `name`, `shape` (``"batch"`` first), numpy `dtype`, and
    the key path of the observation part it holds (() for a plain observation)."""

    name: str
    shape: Tuple[Any, ...]
    dtype: str
    path: Tuple[str, ...]
    space: str

    def as_json(self) -> Dict[str, Any]:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype,
                "space": self.space}


def _leaf_dtype(space: gym.Space) -> str:
    if isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)):
        return "int64"  # as the env manager batches them
    return str(np.dtype(space.dtype))


def _leaf_shape(space: gym.Space) -> Tuple[Any, ...]:
    return ("batch",) if isinstance(space, gym.spaces.Discrete) else ("batch", *space.shape)


def _is_text(space: gym.Space) -> bool:
    return isinstance(space, gym.spaces.Text) or type(space).__name__ == "MissionSpace"


def _leaves(space: gym.Space, prefix: Tuple[str, ...] = ()) -> List[Tuple[Tuple[str, ...], Any]]:
    """(key path, leaf space) of every observation part a model reads, in sorted-key order
    (Tuple parts keyed "0", "1", …), leaving out the action mask key and Text parts."""
    if isinstance(space, gym.spaces.Dict):
        items = sorted(space.spaces.items())
    elif isinstance(space, gym.spaces.Tuple):
        items = [(str(i), s) for i, s in enumerate(space.spaces)]
    else:
        return [(prefix, space)]
    out: List[Tuple[Tuple[str, ...], Any]] = []
    for key, sub in items:
        if key == MASK_INPUT or _is_text(sub):
            continue
        out += _leaves(sub, (*prefix, key))
    return out


def input_specs(obs_space: gym.Space) -> List[InputSpec]:
    """The observation inputs: ``obs`` for a plain space, one per part (named by its key path
    joined with "/") for a Dict or Tuple space."""
    return [InputSpec("/".join(path) or OBS_INPUT, _leaf_shape(leaf), _leaf_dtype(leaf), path,
                      " ".join(repr(leaf).split()))
            for path, leaf in _leaves(obs_space)]


def _nest(paths: List[Tuple[str, ...]], tensors: Tuple[torch.Tensor, ...]) -> Any:
    """The observation as the policy's networks take it: the tensor, or nested dicts."""
    if len(paths) == 1 and not paths[0]:
        return tensors[0]
    obs: Dict[str, Any] = {}
    for path, tensor in zip(paths, tensors):
        node = obs
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = tensor
    return obs


class ActingModule(nn.Module):
    """inputs (observation parts, then the mask if any) → the env's action, greedily.

    `net` is the policy's network (kept as a submodule, so its weights are in the file),
    `raw(obs)` its output before the action head's choice, `choose(raw, mask)` the action."""

    def __init__(self, net: nn.Module, raw: Callable[[Any], torch.Tensor],
                 choose: Callable[[torch.Tensor, Optional[torch.Tensor]], torch.Tensor],
                 paths: List[Tuple[str, ...]], with_mask: bool) -> None:
        super().__init__()
        self.net = net
        self._raw = raw
        self._choose = choose
        self._paths = paths
        self.with_mask = with_mask

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        mask = inputs[-1] if self.with_mask else None
        parts = inputs[:-1] if self.with_mask else inputs
        return self._choose(self._raw(_nest(self._paths, parts)), mask)


def _masked(logits: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
    if mask is None:
        return logits
    return torch.where(mask, logits, torch.full_like(logits, MASKED_LOGIT))


def _discrete(start: int) -> Callable[[torch.Tensor, Optional[torch.Tensor]], torch.Tensor]:
    return lambda logits, mask: _masked(logits, mask).argmax(-1) + start


def _multi_discrete(space: gym.spaces.MultiDiscrete) -> Callable:
    sizes = [int(n) for n in space.nvec]
    start = torch.as_tensor(np.asarray(space.start, np.int64))

    def choose(logits: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
        parts = torch.split(_masked(logits, mask), sizes, dim=-1)
        return torch.stack([p.argmax(-1) for p in parts], -1) + start
    return choose


def _box(low: np.ndarray, high: np.ndarray, scale: Optional[Tuple[np.ndarray, np.ndarray]]
         ) -> Callable:
    """x ↦ clip(bias + scale·x, low, high) (`scale` = (bias, scale); None: clip only)."""
    lo = torch.as_tensor(np.asarray(low, np.float32))
    hi = torch.as_tensor(np.asarray(high, np.float32))
    affine = None if scale is None else tuple(torch.as_tensor(np.asarray(v, np.float32))
                                              for v in scale)

    def choose(x: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
        if affine is not None:
            x = affine[0] + affine[1] * x
        return torch.minimum(torch.maximum(x.float(), lo), hi)
    return choose


def _ppo(policy: Any) -> Tuple[nn.Module, Callable, Callable]:
    model, space = policy.model, policy.action_space

    def raw(obs: Any) -> torch.Tensor:
        if model.obs_norm is not None:
            obs = model.obs_norm(obs)
        return model.action_head(model.actor_encoder(obs))
    if isinstance(space, gym.spaces.Discrete):
        choose = _discrete(int(space.start))
    elif isinstance(space, gym.spaces.MultiDiscrete):
        choose = _multi_discrete(space)
    elif isinstance(space, gym.spaces.MultiBinary):
        dtype = getattr(torch, str(np.dtype(space.dtype)))
        choose = lambda logits, mask: (logits > 0).to(dtype)  # noqa: E731
    else:
        choose = _box(space.low, space.high, None)
    return model, raw, choose


def _continuous_actor(policy: Any) -> Tuple[nn.Module, Callable, Callable]:
    actor, box = policy.actor, policy.box
    normaliser = getattr(policy, "obs_normalizer", None)
    mean = std = None
    if normaliser is not None and normaliser.active:
        mean, std = (torch.as_tensor(normaliser.mean), torch.as_tensor(normaliser.std))

    def raw(obs: Any) -> torch.Tensor:
        if mean is not None:
            obs = (obs.float() - mean) / std
        return policy._greedy(actor, obs)
    return actor, raw, _box(box.low, box.high, (box.bias, box.scale))


def _bc(policy: Any) -> Tuple[nn.Module, Callable, Callable]:
    net = policy.net
    if policy.discrete:
        return net, net, _discrete(int(policy.action_space.start))
    raw = net.deterministic if hasattr(net, "deterministic") else net
    box = policy.box
    return net, raw, _box(box.low, box.high, (box.bias, box.scale))


def refusal(policy_cls: type) -> Optional[str]:
    """Why policies of class `policy_cls` cannot be exported (None: they can)."""
    name = policy_cls.__name__
    if getattr(policy_cls, "recurrent", False):
        return (f"{name} is recurrent: exporting a policy with hidden state is not supported "
                f"(only feed-forward policies: dqn, ppo, sac, td3, bc and the offline ones)")
    if getattr(policy_cls, "multi_agent", False):
        return (f"{name} is multi-agent: exporting a policy with an agent axis is not "
                f"supported (only single-agent policies)")
    if not issubclass(policy_cls, (DQNPolicy, PPOPolicy, TwinCriticPolicy, BCPolicy)):
        return (f"{name} has no deterministic acting face that rlpipe export knows (it "
                f"exports DQN, PPO, SAC, TD3, BC, CQL, IQL and TD3+BC policies)")
    return None


def acting_module(policy: Any, with_mask: bool) -> Tuple[ActingModule, List[InputSpec]]:
    """The greedy acting face of `policy` and its inputs (see the module docstring)."""
    reason = refusal(type(policy))
    if reason is not None:
        raise ExportError(reason)
    if with_mask and not getattr(policy, "supports_action_mask", False):
        raise ExportError(f"{type(policy).__name__} does not act on action masks, so its export "
                          f"cannot take an action_mask input; export it without one")
    if isinstance(policy, DQNPolicy):
        parts: Tuple[nn.Module, Callable, Callable] = (
            policy.online, policy.online, _discrete(policy.action_offset))
    elif isinstance(policy, PPOPolicy):
        parts = _ppo(policy)
    elif isinstance(policy, TwinCriticPolicy):
        parts = _continuous_actor(policy)
    else:
        parts = _bc(policy)
    specs = input_specs(policy.obs_space)
    module = ActingModule(*parts, [s.path for s in specs], with_mask)
    return module.eval().requires_grad_(False), specs
