"""Choose an observation encoder from a gymnasium space: vectors → MLP, images → ConvTrunk + MLP."""
from __future__ import annotations

from typing import Sequence, Type

import gymnasium as gym
import torch
from torch import nn

from ._errors import ObservationShapeError, UnsupportedSpaceError
from .conv import ConvTrunk
from .mlp import MLP

SUPPORTED = ("Box with a 1-D shape (vector observations → MLP), "
             "Box with a 3-D shape (image frames [C, H, W] or [H, W, C] → ConvTrunk)")


class Encoder(nn.Module):
    """Maps a batch of observations [B, *obs_space.shape] to features [B, out_dim] (exactly one
    leading batch axis).

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
        if obs.shape[1:] != self.obs_shape:
            raise ObservationShapeError(
                f"this model was built for observation space {self.space_repr} and expects a batch "
                f"of shape [B, {', '.join(map(str, self.obs_shape))}]; got {tuple(obs.shape)}. "
                "Check that the env and the policy use the same observation space, and pass "
                "observations batched (one leading axis).")
        x = self.trunk(obs) if self.trunk is not None else obs
        if x.dtype != torch.float32:
            x = x.float()
        return self.mlp(x) if self.mlp is not None else x


def build_encoder(obs_space: gym.Space, hidden: Sequence[int] = (256, 256),
                  activation: Type[nn.Module] = nn.ReLU) -> Encoder:
    """An `Encoder` for `obs_space`: its output size is `hidden[-1]` (or the trunk's size when
    `hidden` is empty). For images, `hidden` are the fully connected layers after the conv trunk
    (``hidden=(512,)`` gives the Nature-DQN network)."""
    if not isinstance(obs_space, gym.spaces.Box) or len(obs_space.shape) not in (1, 3):
        hint = ""
        if isinstance(obs_space, gym.spaces.Box) and len(obs_space.shape) == 2:
            hint = (" For single grey frames add a channel axis (e.g. AtariPreprocessing("
                    "grayscale_newaxis=True) or FrameStackObservation); otherwise flatten with "
                    "gymnasium.wrappers.FlattenObservation.")
        elif isinstance(obs_space, (gym.spaces.Dict, gym.spaces.Tuple, gym.spaces.Discrete)):
            hint = " Wrap the env with gymnasium.wrappers.FlattenObservation to get a 1-D Box."
        raise UnsupportedSpaceError(
            f"no encoder for observation space {obs_space!r}. Supported: {SUPPORTED}.{hint}")
    hidden = tuple(int(h) for h in hidden)
    shape = tuple(obs_space.shape)
    trunk = None
    if len(shape) == 3:
        channels_last = shape[2] < shape[0] and shape[2] < shape[1]
        c, h, w = (shape[2], shape[0], shape[1]) if channels_last else shape
        trunk = ConvTrunk(c, h, w, channels_last=channels_last)
        in_dim = trunk.out_dim
    else:
        in_dim = shape[0]
    if not hidden:
        return Encoder(obs_space, trunk, None, in_dim)
    mlp = MLP(in_dim, hidden[-1], hidden[:-1], activation, activate_output=True)
    return Encoder(obs_space, trunk, mlp, hidden[-1])
