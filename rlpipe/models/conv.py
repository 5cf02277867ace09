"""The Nature-DQN convolutional trunk for stacked image frames."""
from __future__ import annotations

import torch
from torch import nn

from ._errors import ObservationShapeError


class ConvTrunk(nn.Module):
    """Conv(32, 8, s4) → Conv(64, 4, s2) → Conv(64, 3, s1), ReLU after each, flattened.

    Built for [B, C, 84, 84] frames (any channel count C; other sizes work if at least 36×36)
    and outputs a feature vector of `out_dim` (3136 for 84×84). uint8 inputs are scaled to
    [0, 1]; float inputs are used as given. With `channels_last=True` inputs are [B, H, W, C].
    """

    def __init__(self, in_channels: int, height: int = 84, width: int = 84,
                 *, channels_last: bool = False) -> None:
        super().__init__()
        if min(height, width) < 36:
            raise ValueError(f"ConvTrunk needs frames of at least 36×36, got {height}×{width}; "
                             "resize the observations (e.g. gymnasium's ResizeObservation).")
        self.in_shape = (height, width, in_channels) if channels_last else (in_channels, height, width)
        self.channels_last = channels_last
        self.net = nn.Sequential(
            nn.Conv2d(in_channels, 32, kernel_size=8, stride=4), nn.ReLU(),
            nn.Conv2d(32, 64, kernel_size=4, stride=2), nn.ReLU(),
            nn.Conv2d(64, 64, kernel_size=3, stride=1), nn.ReLU(),
            nn.Flatten(),
        )
        with torch.no_grad():
            self.out_dim = int(self.net(torch.zeros(1, in_channels, height, width)).shape[1])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4 or tuple(x.shape[1:]) != self.in_shape:
            layout = "[B, H, W, C]" if self.channels_last else "[B, C, H, W]"
            raise ObservationShapeError(
                f"ConvTrunk expects {layout} = [B, {', '.join(map(str, self.in_shape))}], "
                f"got {tuple(x.shape)}.")
        x = x.float() / 255.0 if x.dtype == torch.uint8 else x.float()
        if self.channels_last:
            x = x.permute(0, 3, 1, 2)
        return self.net(x)
