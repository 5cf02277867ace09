"""policies._common.clip_grad_norm: torch's clip_grad_norm_ without its per-call grouping, the
same result to the bit (policies' checkpoints stay what they were)."""
from __future__ import annotations

import math

import pytest
import torch

from rlpipe.policies._common import clip_grad_norm, grad_step


def _params(seed: int, scale: float):
    g = torch.Generator().manual_seed(seed)
    params = []
    for shape in [(64, 151), (64,), (64, 64), (7, 64), (1,)]:
        p = torch.nn.Parameter(torch.randn(shape, generator=g))
        p.grad = torch.randn(shape, generator=g) * scale
        params.append(p)
    params.append(torch.nn.Parameter(torch.zeros(3)))  # no gradient: left alone, as torch does
    return params


@pytest.mark.parametrize("max_norm, scale", [(0.5, 0.3), (100.0, 0.3), (math.inf, 1.0)])
def test_clip_grad_norm_matches_torch_to_the_bit(max_norm, scale):
    ours, theirs = _params(0, scale), _params(0, scale)
    norm = clip_grad_norm(ours, max_norm)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm)
    assert torch.equal(norm, expected)
    for a, b in zip(ours, theirs):
        assert (a.grad is None and b.grad is None) or torch.equal(a.grad, b.grad)
    clipped = math.sqrt(sum(float(p.grad.square().sum()) for p in ours if p.grad is not None))
    assert clipped == pytest.approx(min(float(norm), max_norm), rel=1e-5)


def test_grad_step_starts_from_fresh_gradients_of_every_optimised_parameter():
    net = torch.nn.Linear(3, 2)
    extra = torch.nn.Parameter(torch.ones(2))  # optimised, but outside this loss
    optimizer = torch.optim.Adam([*net.parameters(), extra])
    extra.grad = torch.ones(2)
    x = torch.ones(4, 3)
    grad_step(optimizer, net(x).sum(), list(net.parameters()), None)
    first = net.weight.grad.clone()
    grad_step(optimizer, net(x).sum(), list(net.parameters()), None)
    assert torch.equal(net.weight.grad, first)  # not accumulated over the two steps
    assert extra.grad is None
