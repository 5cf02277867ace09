"""A plain multi-layer perceptron."""
from __future__ import annotations

from typing import Sequence, Type

import torch
import torch.nn.functional as F
from torch import nn

from ._errors import ObservationShapeError


def apply_layer(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """`layer.forward(x)`, a plain Linear as `F.linear` on its current weight and bias.

    The acting path calls a few small layers per env step, where reading `weight` and `bias`
    through `Module.__getattr__` and the extra frame of `Linear.forward` cost about as much as
    the matrix products themselves; the parameters are read from the layer's parameter dict at
    each call, so loaded, moved or reassigned weights are used. The same op on the same
    tensors: the same bits. Hooks on `layer` are not run (its forward is called directly).
    """
    if type(layer) is nn.Linear:
        params = layer._parameters
        return F.linear(x, params["weight"], params["bias"])
    return layer.forward(x)


class MLP(nn.Module):
    """Linear layers with `activation` between them: in_dim → *hidden → out_dim.

    With `activate_output=True` the activation also follows the last layer (use it for an
    encoder whose output feeds further layers). Inputs are [..., in_dim]; a different last
    dimension raises `ObservationShapeError`. The layers are `self.net` (an nn.Sequential).
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        hidden: Sequence[int] = (64, 64),
        activation: Type[nn.Module] = nn.ReLU,
        *,
        activate_output: bool = False,
    ) -> None:
        super().__init__()
        sizes = [int(in_dim), *(int(h) for h in hidden), int(out_dim)]
        if any(s <= 0 for s in sizes):
            raise ValueError(f"MLP layer sizes must be positive, got {sizes} "
                             f"(in_dim={in_dim}, hidden={tuple(hidden)}, out_dim={out_dim}).")
        layers: list = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(nn.Linear(a, b))
            if i < len(sizes) - 2 or activate_output:
                layers.append(activation())
        self.net = nn.Sequential(*layers)
        self.in_dim = sizes[0]
        self.out_dim = sizes[-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 0 or x.shape[-1] != self.in_dim:
            raise ObservationShapeError(
                f"MLP expects inputs of shape [..., {self.in_dim}], got {tuple(x.shape)}.")
        # Run each layer's forward directly instead of through Module.__call__ (and Sequential):
        # collectors call this once per env step, where call overhead outweighs a small
        # network's arithmetic (this saves about a quarter at batch 8). Per-layer hooks are not run;
        # hooks on the MLP itself are. The layers are read from `net` at each call, so a
        # replaced layer is the one that runs.
        for step in self._modules["net"]._modules.values():
            x = apply_layer(step, x)
        return x
