"""Choose an observation encoder from a gymnasium space.

- 1-D Box (vectors) → MLP; 3-D Box (images, channels first or last) → conv trunk + MLP
  (the Nature trunk for frames of at least 36×36, a small 2×2 trunk for grids such as MiniGrid's);
- Discrete / MultiDiscrete → one-hot (or embeddings) + MLP;
- Dict / Tuple → one extractor per part, features concatenated in sorted-key order (nested Dicts
  too; a Tuple's parts are keyed "0", "1", … as the env manager batches them), then one MLP.
  A key "action_mask" is not a feature (it is where PettingZoo-style envs put the mask) and a
  Text part is left out with one logged line, unless `encoders` names an encoder for it.

`encoders` (the policies' ``model.encoders``) overrides the kind per key, mirroring the space's
nesting: ``{"image": "mlp"}``, ``{"outer": {"inner": "embed"}}``; kinds are listed in
`rlpipe.models._parts`; ``"module:function"`` names your own, called as ``function(space)`` and
returning an ``nn.Module`` with an ``out_dim`` attribute.

`GivenEncoder` wraps a whole-observation network of your own (DI-engine's `VAC(encoder=...)`).
"""
from __future__ import annotations

import importlib
import logging
from typing import Any, Dict, Iterator, Mapping, Optional, Sequence, Tuple, Type

import gymnasium as gym
import torch
from torch import nn

from ._errors import ObservationShapeError, UnsupportedSpaceError
from ._parts import KINDS, CategoricalPart, FlatPart, build_part, channels_last, default_kind
from .conv import ConvTrunk
from .mlp import MLP

log = logging.getLogger("rlpipe")

MASK_KEY = "action_mask"
SUPPORTED = ("Box (1-D vectors → MLP; 3-D images [C, H, W] or [H, W, C] → conv trunk), "
             "Discrete/MultiDiscrete (one-hot), MultiBinary, and Dict/Tuple of those")


class Encoder(nn.Module):
    """Maps a batch of Box observations [B, *obs_space.shape] to features [B, out_dim] (exactly
    one leading batch axis).

    `trunk` is None (vectors) or a ConvTrunk (images); `mlp` holds the `hidden` layers, each
    followed by the activation. An input whose shape does not match the space raises
    `ObservationShapeError` naming the space.
    """

    def __init__(self, obs_space: gym.spaces.Box, trunk: nn.Module | None, mlp: nn.Module | None,
                 out_dim: int) -> None:
        super().__init__()
        self.obs_shape = tuple(obs_space.shape)
        self.space_repr = repr(obs_space)
        self.trunk = trunk
        self.mlp = mlp
        self.out_dim = out_dim

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(obs))

    def features(self, obs: torch.Tensor) -> torch.Tensor:
        """The input of the MLP: the trunk's output (images) or the observation, as float32."""
        if not isinstance(obs, torch.Tensor) or obs.shape[1:] != self.obs_shape:
            got = tuple(obs.shape) if isinstance(obs, torch.Tensor) else type(obs).__name__
            raise ObservationShapeError(
                f"this model was built for observation space {self.space_repr} and expects a batch "
                f"of shape [B, {', '.join(map(str, self.obs_shape))}]; got {got}. "
                "Check that the env and the policy use the same observation space, and pass "
                "observations batched (one leading axis).")
        x = self.trunk(obs) if self.trunk is not None else obs
        return x if x.dtype == torch.float32 else x.float()

    def head(self, x: torch.Tensor) -> torch.Tensor:
        """The MLP on `features(obs)` (the features themselves when there is none)."""
        mlp = self._modules.get("mlp")
        return x if mlp is None else mlp.forward(x)

    def input_stage(self) -> Tuple[nn.Module, ...]:
        """The modules `features` runs (what `shares_features` compares)."""
        return () if self.trunk is None else (self.trunk,)


class MultiPartEncoder(nn.Module):
    """Dict/Tuple (or Discrete/MultiDiscrete) observations → features [B, out_dim].

    `parts` maps a key path ("image", "outer/inner"; "" for a non-nested space) to its extractor;
    features are concatenated in that (sorted) order and pass through `mlp` when there is one.
    Inputs are nested mappings of tensors (dicts or treetensor trees) with one leading batch axis.
    """

    def __init__(self, obs_space: gym.Space, parts: Dict[str, nn.Module], mlp: nn.Module | None,
                 in_dim: int) -> None:
        super().__init__()
        self.space_repr = repr(obs_space)
        self.paths: Tuple[str, ...] = tuple(parts)
        self.parts = nn.ModuleList(parts[p] for p in self.paths)
        # each part's path keys, in the parts' order; the per-step path below calls the parts'
        # forward, not Module.__call__ (as MLP does; hooks on the parts are not run, hooks on
        # self are), reading them from `parts` at each call so that a replaced part runs
        self._keys = tuple(tuple(p.split("/")) if p else () for p in self.paths)
        self.mlp = mlp
        self.out_dim = mlp.out_dim if mlp is not None else in_dim

    def _leaf(self, obs: Any, path: Tuple[str, ...]) -> torch.Tensor:
        node = obs
        if path:
            for key in path:
                try:
                    node = node[key]
                except (KeyError, IndexError, TypeError) as exc:
                    raise ObservationShapeError(
                        f"this model was built for observation space {self.space_repr}; the "
                        f"batch has no part {'/'.join(path)!r} ({type(exc).__name__}: {exc}). Pass "
                        "observations as nested dicts of arrays, as the env manager batches "
                        "them.") from exc
        if not isinstance(node, torch.Tensor):
            node = torch.as_tensor(node)
        return node

    def forward(self, obs: Any) -> torch.Tensor:
        return self.head(self.features(obs))

    def features(self, obs: Any) -> torch.Tensor:
        """The input of the MLP: the parts' features concatenated [B, in_dim]."""
        parts = self._modules["parts"]._modules.values()
        feats = [part.forward(self._leaf(obs, path)) for path, part in zip(self._keys, parts)]
        return feats[0] if len(feats) == 1 else torch.cat(feats, dim=-1)

    def head(self, x: torch.Tensor) -> torch.Tensor:
        """The MLP on `features(obs)` (the features themselves when there is none)."""
        mlp = self._modules.get("mlp")
        return x if mlp is None else mlp.forward(x)

    def input_stage(self) -> Tuple[nn.Module, ...]:
        """The modules `features` runs (what `shares_features` compares)."""
        return tuple(self.parts)


def shares_features(a: nn.Module, b: nn.Module) -> bool:
    """Whether encoders `a` and `b` compute the same `features` of every observation, so that
    one call serves both (an actor's and a critic's encoder built alike): the same kind of
    encoder, whose input stages are rlpipe's fixed parts (read flat, one-hot; no trunk) with
    equal buffers (one-hot tables, scales). A trained stage (conv trunk, embeddings) differs
    between the two, and a user's part ("module:function") is not assumed to be a function."""
    if type(a) is not type(b) or not isinstance(a, (Encoder, MultiPartEncoder)):
        return False
    if isinstance(a, Encoder) and (a.trunk is not None or b.trunk is not None):
        return False
    stages_a, stages_b = a.input_stage(), b.input_stage()
    if len(stages_a) != len(stages_b) or getattr(a, "paths", None) != getattr(b, "paths", None):
        return False
    for x, y in zip(stages_a, stages_b):
        if (type(x) is not type(y) or not isinstance(x, (FlatPart, CategoricalPart))
                or any(True for _ in x.parameters()) or any(True for _ in y.parameters())):
            return False
        bx, by = list(x.buffers()), list(y.buffers())
        if len(bx) != len(by) or not all(u.shape == v.shape and torch.equal(u, v)
                                          for u, v in zip(bx, by)):
            return False
    return True


def structured(obs: Any, space: gym.Space) -> Any:
    """A batch as the env manager gives it (nested dicts, a Tuple's parts keyed "0", "1", ...)
    → the space's own nesting (dicts for Dict, tuples for Tuple), leaves as float32 tensors."""
    if isinstance(space, gym.spaces.Dict):
        return {key: structured(obs[key], sub) for key, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(structured(obs[str(i)] if isinstance(obs, Mapping) else obs[i], sub)
                     for i, sub in enumerate(space.spaces))
    return torch.as_tensor(obs).float()


def _zeros(space: gym.Space) -> Any:
    """A batch of one all-zero observation of `space`, nested as the env manager nests it."""
    if isinstance(space, gym.spaces.Dict):
        return {key: _zeros(sub) for key, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return {str(i): _zeros(sub) for i, sub in enumerate(space.spaces)}
    return torch.zeros((1, *(space.shape or ())))


class GivenEncoder(nn.Module):
    """A user's network as the encoder of an rlpipe model (DI-engine's `VAC(encoder=...)`).

    `module` gets each batch nested as the observation space is (a Dict's parts as a dict, a
    Tuple's as a tuple, a Box as one tensor), leaves as float32 tensors with one leading batch
    axis (DI-engine's collectors hand its encoders float tensors too), and returns features
    [B, F]. F (`in_dim`) is read from one forward pass on a zero observation when the module
    has no int `out_dim`. The `hidden` layers follow it (none when `hidden` is empty).
    """

    def __init__(self, obs_space: gym.Space, module: nn.Module, hidden: Sequence[int] = (),
                 activation: Type[nn.Module] = nn.ReLU) -> None:
        super().__init__()
        if not isinstance(module, nn.Module):
            raise TypeError(f"encoder=: a torch.nn.Module that maps a batch of observations to "
                            f"features [B, F] is needed, got a {type(module).__name__}")
        self.obs_space, self.module = obs_space, module
        in_dim = getattr(module, "out_dim", None)
        if not isinstance(in_dim, int):
            in_dim = self._probe()
        self.in_dim = in_dim
        hidden = tuple(int(h) for h in hidden)
        self.mlp = (MLP(in_dim, hidden[-1], hidden[:-1], activation, activate_output=True)
                    if hidden else None)
        self.out_dim = hidden[-1] if hidden else in_dim

    @torch.no_grad()
    def _probe(self) -> int:
        name = type(self.module).__name__
        try:
            out = self.module(structured(_zeros(self.obs_space), self.obs_space))
        except (RuntimeError, TypeError, KeyError, IndexError, ValueError) as exc:
            raise ValueError(
                f"encoder= {name} fails on a batch of one zero observation of "
                f"{self.obs_space!r} ({type(exc).__name__}: {exc}); it must take a batch nested "
                "as the space (dict / tuple of float32 tensors [B, ...]) and return [B, F]"
            ) from exc
        if not isinstance(out, torch.Tensor) or out.dim() != 2 or out.shape[0] != 1:
            got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise ValueError(f"encoder= {name} must return features [B, F] (one row per "
                             f"observation), got {got} for a batch of one; flatten its output")
        return int(out.shape[1])

    def forward(self, obs: Any) -> torch.Tensor:
        x = self.module(structured(obs, self.obs_space))
        return self.mlp(x) if self.mlp is not None else x


def _custom_part(spec: str, space: gym.Space, where: str) -> nn.Module:
    module_name, _, attr = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"model.encoders.{where}={spec!r}: cannot load {attr!r} from module "
                         f"{module_name!r} ({exc}); give 'module:function' of a function that "
                         "takes the space and returns an nn.Module with out_dim.") from exc
    part = factory(space)
    if not isinstance(part, nn.Module) or not isinstance(getattr(part, "out_dim", None), int):
        raise TypeError(f"model.encoders.{where}={spec!r} returned {type(part).__name__}; it must "
                        "return an nn.Module with an int attribute out_dim.")
    return part


def _is_text(space: gym.Space) -> bool:
    """A Text part (or MiniGrid's MissionSpace, a text space of its own)."""
    return isinstance(space, gym.spaces.Text) or type(space).__name__ == "MissionSpace"


def _leaves(space: gym.Space, overrides: Any, prefix: str
            ) -> Iterator[Tuple[str, gym.Space, Optional[Any]]]:
    """(key path, leaf space, override or None) in sorted-key order; skips action masks."""
    if isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple)):
        items = (sorted(space.spaces.items()) if isinstance(space, gym.spaces.Dict)
                 else [(str(i), s) for i, s in enumerate(space.spaces)])
        subs = overrides if isinstance(overrides, Mapping) else {}
        for key, sub in items:
            if key == MASK_KEY:
                continue
            yield from _leaves(sub, subs.get(key), f"{prefix}/{key}" if prefix else key)
    else:
        yield prefix, space, overrides


def _check_override_keys(space: gym.Space, overrides: Mapping, where: str) -> None:
    keys = (set(space.spaces) if isinstance(space, gym.spaces.Dict)
            else {str(i) for i in range(len(space.spaces))}
            if isinstance(space, gym.spaces.Tuple) else set())
    for key, value in overrides.items():
        if key not in keys:
            raise KeyError(f"model.encoders{where}.{key}: the observation space has no part "
                           f"{key!r} (its parts: {sorted(keys) or 'none: not a Dict/Tuple'}).")
        if isinstance(value, Mapping):
            sub = space[key] if isinstance(space, gym.spaces.Dict) else space[int(key)]
            _check_override_keys(sub, value, f"{where}.{key}")


def build_encoder(obs_space: gym.Space, hidden: Sequence[int] = (256, 256),
                  activation: Type[nn.Module] = nn.ReLU,
                  encoders: Optional[Mapping[str, Any]] = None) -> nn.Module:
    """An encoder for `obs_space` whose output size is `hidden[-1]` (or the extractors' total
    when `hidden` is empty). For images, `hidden` are the fully connected layers after the conv
    trunk (``hidden=(512,)`` gives the Nature-DQN network). `encoders` overrides the kind per
    Dict key (see the module's docstring)."""
    hidden = tuple(int(h) for h in hidden)
    encoders = dict(encoders or {})
    if isinstance(obs_space, gym.spaces.Box) and len(obs_space.shape) in (1, 3) and not encoders:
        return _box_encoder(obs_space, hidden, activation)
    if isinstance(obs_space, gym.spaces.Box) and len(obs_space.shape) not in (1, 3):
        hint = (" For single grey frames add a channel axis (e.g. AtariPreprocessing("
                "grayscale_newaxis=True) or FrameStackObservation); otherwise flatten with "
                "gymnasium.wrappers.FlattenObservation." if len(obs_space.shape) == 2 else
                " Flatten it with gymnasium.wrappers.FlattenObservation.")
        raise UnsupportedSpaceError(
            f"no encoder for observation space {obs_space!r}. Supported: {SUPPORTED}.{hint}")
    if isinstance(obs_space, gym.spaces.Text):
        raise UnsupportedSpaceError(
            f"no encoder for observation space {obs_space!r}. Supported: {SUPPORTED}; a Text "
            "part of a Dict is left out of the model's input.")
    if encoders:
        _check_override_keys(obs_space, encoders, "")
    parts: Dict[str, nn.Module] = {}
    for path, leaf, override in _leaves(obs_space, encoders, ""):
        where = path or "<observation>"
        if isinstance(override, str) and ":" in override:
            parts[path] = _custom_part(override, leaf, where)
            continue
        if _is_text(leaf) and override is None:
            log.info("observation part %r (a text space) is left out of the model's input; give "
                     "it an encoder with model.encoders.%s='module:function'", where, where)
            continue
        kind = override if isinstance(override, str) else None
        try:
            kind = kind or default_kind(leaf)
        except UnsupportedSpaceError:
            raise UnsupportedSpaceError(
                f"no encoder for observation part {where}: {leaf!r}. Supported: {SUPPORTED}; or "
                f"give one with model.encoders.{where}='module:function'.") from None
        if kind == "skip":
            continue
        parts[path] = build_part(leaf, kind, where)
    if not parts:
        raise UnsupportedSpaceError(f"observation space {obs_space!r}: every part is left out "
                                    "(action masks, Text, 'skip'), so the model has no input.")
    in_dim = sum(p.out_dim for p in parts.values())
    mlp = MLP(in_dim, hidden[-1], hidden[:-1], activation, activate_output=True) if hidden else None
    return MultiPartEncoder(obs_space, parts, mlp, in_dim)


def _box_encoder(obs_space: gym.spaces.Box, hidden: Tuple[int, ...],
                 activation: Type[nn.Module]) -> Encoder:
    shape = tuple(obs_space.shape)
    trunk: nn.Module | None = None
    if len(shape) == 3:
        trunk = build_part(obs_space, "conv", "<observation>")
        in_dim = trunk.out_dim
    else:
        in_dim = shape[0]
    if not hidden:
        return Encoder(obs_space, trunk, None, in_dim)
    mlp = MLP(in_dim, hidden[-1], hidden[:-1], activation, activate_output=True)
    return Encoder(obs_space, trunk, mlp, hidden[-1])


__all__ = ["Encoder", "GivenEncoder", "MultiPartEncoder", "build_encoder", "shares_features",
           "KINDS", "ConvTrunk", "channels_last"]
