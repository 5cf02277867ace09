"""Feature extractors for one leaf of an observation space (a part of a Dict, or the whole space).

Each part maps a batch [B, *leaf shape] to float features [B, out_dim] and has no trainable
layers after its trunk: the encoder that joins the parts puts its MLP on top.

Kinds (the values of ``model.encoders.<key>``):
  "flat"    — the leaf as a float vector (uint8 images scaled to [0, 1]); the default for 1-D Box
  "mlp"     — the same as "flat" (the encoder's MLP follows): an image read as a flat vector
  "conv"    — a conv trunk: the Nature trunk for frames of at least 36×36, else a small 2×2 trunk
  "nature"  — the Nature-DQN trunk (frames of at least 36×36)
  "smallconv" — three 2×2 convolutions (16, 32, 64), for small images (fewer than 36×36)
  "grid"    — the same small trunk on the raw integer values (unscaled)

uint8 parts are scaled to [0, 1] by the space's upper bounds (pixels: 255; a grid of object ids
declared as Box(0, 10): 10), except by the Nature trunk, which divides by 255.
  "onehot"  — Discrete / MultiDiscrete as one-hot vectors (concatenated per dimension)
  "embed"   — Discrete / MultiDiscrete as learned 8-dim embeddings (concatenated)
  "skip"    — left out
"""
from __future__ import annotations

from typing import Tuple

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ._errors import ObservationShapeError, UnsupportedSpaceError
from .conv import ConvTrunk

KINDS = ("flat", "mlp", "conv", "nature", "smallconv", "grid", "onehot", "embed", "skip")
EMBED_DIM = 8


def is_image(space: gym.Space) -> bool:
    """A 3-D Box: an image [C, H, W] or [H, W, C]."""
    return isinstance(space, gym.spaces.Box) and len(space.shape) == 3


def channels_last(shape: Tuple[int, ...]) -> bool:
    """Whether a 3-D shape is [H, W, C] (its last axis is the smallest)."""
    return shape[2] < shape[0] and shape[2] < shape[1]


def default_kind(space: gym.Space) -> str:
    """The kind a leaf gets when the config names none."""
    if isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)):
        return "onehot"
    if is_image(space):
        return "conv"
    if isinstance(space, (gym.spaces.Box, gym.spaces.MultiBinary)):
        return "flat"
    raise UnsupportedSpaceError(f"no encoder for observation part {space!r}")


def uint8_scale(space: gym.Space) -> torch.Tensor | None:
    """1 / the space's upper bounds, per element, for a uint8 Box (so inputs land in [0, 1]:
    pixels are divided by 255, a grid of ids 0–10 declared as Box(0, 10) by 10); else None."""
    if not (isinstance(space, gym.spaces.Box) and space.dtype == np.uint8):
        return None
    return torch.as_tensor(1.0 / np.maximum(space.high.astype(np.float32), 1.0))


class FlatPart(nn.Module):
    """[B, *shape] → [B, prod(shape)] floats; uint8 inputs are scaled to [0, 1] by the space's
    upper bounds."""

    def __init__(self, space: gym.Space, where: str) -> None:
        super().__init__()
        self.shape = tuple(space.shape)
        self._size = torch.Size(self.shape)
        self.where = where
        self.out_dim = int(np.prod(self.shape)) if self.shape else 1
        self.register_buffer("inv_high", uint8_scale(space), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[1:] != self._size:
            raise ObservationShapeError(
                f"observation part {self.where} expects a batch [B, "
                f"{', '.join(map(str, self.shape))}], got {tuple(x.shape)}; check that the env "
                "and the policy use the same observation space.")
        # uint8 × float32 buffer gives float32 in one op (no separate cast)
        x = torch.mul(x, self.inv_high) if self.inv_high is not None else x.float()
        return x.reshape(x.shape[0], self.out_dim)


class SmallConvTrunk(nn.Module):
    """Conv(16, 2×2) → Conv(32, 2×2) → Conv(64, 2×2), ReLU after each, flattened: a trunk for
    small grids (at least 4×4), e.g. MiniGrid's 7×7×3 view. uint8 inputs are multiplied by
    `inv_high` (1 / the space's upper bounds, shaped like one input) when given, else divided by
    255; with `scale=False` they are used as they are (symbolic grids of ids)."""

    def __init__(self, in_channels: int, height: int, width: int, *,
                 channels_last: bool = False, scale: bool = True,
                 inv_high: torch.Tensor | None = None) -> None:
        super().__init__()
        if min(height, width) < 4:
            raise ValueError(f"SmallConvTrunk needs grids of at least 4×4, got {height}×{width}; "
                             "use model.encoders.<key>='flat' for smaller ones.")
        self.in_shape = (height, width, in_channels) if channels_last else (in_channels, height, width)
        self.channels_last = channels_last
        self.scale = scale
        self.register_buffer("inv_high", inv_high if scale else None, persistent=False)
        self.net = nn.Sequential(
            nn.Conv2d(in_channels, 16, 2), nn.ReLU(),
            nn.Conv2d(16, 32, 2), nn.ReLU(),
            nn.Conv2d(32, 64, 2), nn.ReLU(),
            nn.Flatten(),
        )
        self.out_dim = 64 * (height - 3) * (width - 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4 or tuple(x.shape[1:]) != self.in_shape:
            layout = "[B, H, W, C]" if self.channels_last else "[B, C, H, W]"
            raise ObservationShapeError(
                f"SmallConvTrunk expects {layout} = [B, {', '.join(map(str, self.in_shape))}], "
                f"got {tuple(x.shape)}.")
        if self.scale and x.dtype == torch.uint8:
            x = x.float() * self.inv_high if self.inv_high is not None else x.float() / 255.0
        else:
            x = x.float()
        if self.channels_last:
            x = x.permute(0, 3, 1, 2)
        return self.net(x)


class CategoricalPart(nn.Module):
    """Discrete(n, start) or MultiDiscrete(nvec, start) → one-hot vectors or learned embeddings,
    concatenated over the dimensions."""

    def __init__(self, space: gym.Space, kind: str, where: str) -> None:
        super().__init__()
        if isinstance(space, gym.spaces.Discrete):
            sizes, start, self.scalar = [int(space.n)], [int(space.start)], True
        else:
            sizes = [int(n) for n in np.asarray(space.nvec).reshape(-1)]
            start = [int(s) for s in np.asarray(space.start).reshape(-1)]
            self.scalar = False
        self.where = where
        self.sizes = sizes
        self.register_buffer("start", torch.tensor(start, dtype=torch.long), persistent=False)
        self._offset = any(start)
        self.embed = (nn.ModuleList(nn.Embedding(n, EMBED_DIM) for n in sizes)
                      if kind == "embed" else None)
        self.out_dim = (EMBED_DIM * len(sizes)) if self.embed is not None else sum(sizes)
        # one component one-hot: rows of an identity (one index_select per step, not one_hot)
        eye = torch.eye(sizes[0]) if self.embed is None and len(sizes) == 1 else None
        self.register_buffer("eye", eye, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.long().reshape(x.shape[0], -1) if x.dim() > 0 else x.long().reshape(1, 1)
        if x.shape[1] != len(self.sizes):
            raise ObservationShapeError(
                f"observation part {self.where} expects {len(self.sizes)} categorical value(s) "
                f"per row, got a batch of shape {tuple(x.shape)}.")
        if self._offset:
            x = x - self.start
        if self.embed is not None:
            return torch.cat([emb(x[:, i]) for i, emb in enumerate(self.embed)], dim=-1)
        if self.eye is not None:
            try:
                return self.eye.index_select(0, x[:, 0])
            except IndexError:
                raise ObservationShapeError(
                    f"observation part {self.where} takes values in [{int(self.start[0])}, "
                    f"{int(self.start[0]) + self.sizes[0]}), got {x[:, 0] + self.start[0]}; check "
                    "that the env's observations lie in its observation space.") from None
        return torch.cat([F.one_hot(x[:, i], n).float() for i, n in enumerate(self.sizes)], dim=-1)


def build_part(space: gym.Space, kind: str, where: str) -> nn.Module:
    """The extractor of `kind` for the leaf `space` at `where` (a key path, for messages)."""
    if kind not in KINDS or kind == "skip":
        raise ValueError(f"model.encoders.{where}={kind!r}: unknown encoder kind; choose one of "
                         f"{', '.join(KINDS)}.")
    categorical = isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete))
    if kind in ("onehot", "embed"):
        if not categorical:
            raise UnsupportedSpaceError(
                f"model.encoders.{where}={kind!r} needs a Discrete or MultiDiscrete part, got "
                f"{space!r}; use 'flat' (vectors) or 'conv' (images).")
        return CategoricalPart(space, kind, where)
    if kind in ("conv", "nature", "smallconv", "grid"):
        if not is_image(space):
            raise UnsupportedSpaceError(
                f"model.encoders.{where}={kind!r} needs an image (a 3-D Box), got {space!r}; "
                "use 'flat' for vectors.")
        shape = tuple(space.shape)
        last = channels_last(shape)
        c, h, w = (shape[2], shape[0], shape[1]) if last else shape
        if kind == "nature" or (kind == "conv" and min(h, w) >= 36):
            return ConvTrunk(c, h, w, channels_last=last)
        return SmallConvTrunk(c, h, w, channels_last=last, scale=kind != "grid",
                              inv_high=uint8_scale(space))
    if categorical:  # "flat" / "mlp" on a categorical part: its one-hot vector
        return CategoricalPart(space, "onehot", where)
    if not isinstance(space, (gym.spaces.Box, gym.spaces.MultiBinary)):
        raise UnsupportedSpaceError(f"no encoder for observation part {where}: {space!r}")
    return FlatPart(space, where)
