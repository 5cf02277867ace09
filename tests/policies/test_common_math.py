"""The shared learn-step pieces in rlpipe/policies/_common.py agree bit for bit with the plain
torch they stand for: gradient clipping with torch.nn.utils.clip_grad_norm_, the bootstrap
weight with gamma · (1 − terminated), a gradient step with zero_grad, backward and clipping, and
AdamStep (and adam_step, which keeps one on the optimizer) with Adam.step."""
import copy
import math

import numpy as np
import pytest
import torch
from torch import nn

from rlpipe.policies._common import (AdamStep, adam, adam_step, clip_grad_norm, grad_step,
                                    td_discount)


def net_with_grads(seed, scale, dtype=torch.float32):
    """A small MLP (and a parameter left without a gradient) after one backward pass."""
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(5, 32), nn.ReLU(), nn.Linear(32, 3)).to(dtype)
    unused = nn.Parameter(torch.ones(4, dtype=dtype))
    (net(torch.randn(17, 5, dtype=dtype)) * scale).square().mean().backward()
    return [*net.parameters(), unused]


def grads(params):
    return [None if p.grad is None else p.grad.clone() for p in params]


@pytest.mark.parametrize("max_norm", [1e-3, 0.5, 10, 1e6, None])
@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_clip_grad_norm_matches_torch_bit_for_bit(max_norm, scale):
    ours, theirs = net_with_grads(0, scale), net_with_grads(0, scale)
    total = clip_grad_norm(ours, max_norm)
    expected = nn.utils.clip_grad_norm_(theirs, math.inf if max_norm is None else max_norm)
    assert total.dtype == expected.dtype and torch.equal(total, expected)
    for a, b in zip(grads(ours), grads(theirs)):
        assert (a is None and b is None) or torch.equal(a, b)
    if max_norm is not None and expected > max_norm:  # it clipped: the norm is now max_norm
        assert nn.utils.get_total_norm([p.grad for p in ours if p.grad is not None]) == \
            pytest.approx(max_norm, rel=1e-4)


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_clip_grad_norm_of_non_finite_gradients_is_torchs(bad):
    """A NaN or infinite gradient makes the factor NaN or 0, never 1: the gradients are
    multiplied as torch multiplies them."""
    ours, theirs = net_with_grads(4, 1.0), net_with_grads(4, 1.0)
    for params in (ours, theirs):
        params[0].grad[0, 0] = bad
    assert torch.equal(clip_grad_norm(ours, 0.5).nan_to_num(7.0),
                       nn.utils.clip_grad_norm_(theirs, 0.5).nan_to_num(7.0))
    for a, b in zip(grads(ours), grads(theirs)):
        assert (a is None and b is None) or torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))


def test_clip_grad_norm_with_mixed_dtypes_or_no_gradients_is_torchs():
    mixed = net_with_grads(1, 10.0) + net_with_grads(2, 10.0, torch.float64)
    reference = net_with_grads(1, 10.0) + net_with_grads(2, 10.0, torch.float64)
    assert torch.equal(clip_grad_norm(mixed, 0.1), nn.utils.clip_grad_norm_(reference, 0.1))
    for a, b in zip(grads(mixed), grads(reference)):
        assert (a is None and b is None) or torch.equal(a, b)
    bare = [nn.Parameter(torch.ones(3))]
    assert torch.equal(clip_grad_norm(bare, 1.0), nn.utils.clip_grad_norm_(bare, 1.0))


@pytest.mark.parametrize("gamma", [0.99, 0.997, 0.5, 1.0, 0.123456789])
def test_td_discount_is_gamma_times_not_terminated(gamma):
    rng = np.random.default_rng(0)
    terminated = torch.from_numpy(rng.random(257) < 0.3)
    expected = gamma * (1.0 - terminated.float())
    got = td_discount({"terminated": terminated}, gamma)
    assert got.dtype == torch.float32 and torch.equal(got, expected)
    assert torch.equal(got[terminated], torch.zeros(int(terminated.sum())))
    as_float = td_discount({"terminated": terminated.float() * 0.5}, gamma)  # not flags: the formula
    assert torch.equal(as_float, gamma * (1.0 - 0.5 * terminated.float()))
    discount = torch.full((3,), 0.25, dtype=torch.float64)
    assert torch.equal(td_discount({"terminated": terminated[:3], "discount": discount}, gamma),
                       discount.float())


def test_grad_step_starts_from_no_gradients_like_zero_grad():
    """Two steps in a row: the second's gradients are its loss's alone (nothing accumulates),
    equal to torch's zero_grad + backward + clip_grad_norm_; a parameter the loss does not
    reach has no gradient after it, as zero_grad(set_to_none=True) leaves it."""
    ours, theirs = net_with_grads(3, 5.0), net_with_grads(3, 5.0)
    opt_ours, opt_theirs = torch.optim.Adam(ours, lr=0.1), torch.optim.Adam(theirs, lr=0.1)
    x = torch.randn(9, 5)
    for params, opt in ((ours, opt_ours), (theirs, opt_theirs)):
        params[-1].grad = torch.ones(4)  # stale: the step must drop it
    for step in range(2):
        norm = grad_step(opt_ours, nn.functional.linear(x, ours[0], ours[1]).square().mean(),
                         ours, 0.5, norm=True)
        opt_theirs.zero_grad(set_to_none=True)
        nn.functional.linear(x, theirs[0], theirs[1]).square().mean().backward()
        assert torch.equal(norm, nn.utils.clip_grad_norm_(theirs, 0.5)), step
        assert [g is None for g in grads(ours)] == [False, False, True, True, True], step
        for a, b in zip(grads(ours), grads(theirs)):
            assert (a is None and b is None) or torch.equal(a, b)
        opt_ours.step()
        opt_theirs.step()


def adam_twins(**kwargs):
    """Two equal small networks, each with its own fused Adam of the same settings."""
    torch.manual_seed(3)
    nets = [nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 2))]
    nets.append(copy.deepcopy(nets[0]))
    return nets, [torch.optim.Adam(n.parameters(), **kwargs) for n in nets]


def backward_on(net, x):
    for p in net.parameters():
        p.grad = None
    net(x).square().mean().backward()


def same_training(nets, optims):
    params = all(torch.equal(a, b) for a, b in zip(nets[0].parameters(), nets[1].parameters()))
    states = [[optim.state[p] for p in net.parameters()] for net, optim in zip(nets, optims)]
    moments = all(torch.equal(a[k], b[k]) for a, b in zip(*states)
                  for k in ("exp_avg", "exp_avg_sq", "step"))
    return params and moments


def train_both(nets, optims, step, n):
    """`n` steps on the same inputs: the first network by Adam.step, the second by `step`."""
    for _ in range(n):
        x = torch.randn(9, 6)
        backward_on(nets[0], x)
        optims[0].step()
        backward_on(nets[1], x)
        step()


@pytest.mark.parametrize("lr", [2.5e-4, 3e-2])
def test_adam_step_trains_as_adam_step_bit_for_bit(lr):
    nets, optims = adam_twins(lr=lr, eps=1e-5, fused=True)
    step = AdamStep(optims[1])
    for i in range(6):
        train_both(nets, optims, step, 1)
        assert same_training(nets, optims), f"step {i}"
    assert step._bound is not None  # past the first step it called the kernel itself


def test_adam_step_follows_a_loaded_state_and_counts_into_the_optimizers_state():
    nets, optims = adam_twins(lr=1e-2, fused=True)
    step = AdamStep(optims[1])
    train_both(nets, optims, step, 3)
    saved = copy.deepcopy(optims[0].state_dict())
    optims[1].load_state_dict(copy.deepcopy(saved))
    nets[1].load_state_dict(nets[0].state_dict())
    train_both(nets, optims, step, 2)
    assert same_training(nets, optims)
    assert optims[1].state_dict()["state"][0]["step"].item() == 5.0


@pytest.mark.parametrize("setting", [dict(weight_decay=0.1), dict(amsgrad=True),
                                     dict(fused=False)])
def test_adam_step_leaves_other_settings_and_hooks_to_adam(setting):
    nets, optims = adam_twins(**dict(dict(lr=1e-2, fused=True), **setting))
    step = AdamStep(optims[1])
    calls = []
    optims[1].register_step_post_hook(lambda *args: calls.append(1))
    train_both(nets, optims, step, 3)
    assert same_training(nets, optims)
    assert len(calls) == 3  # every step went through Adam.step, which runs the hook


def test_adam_step_of_rlpipes_adam_calls_the_kernel_itself():
    torch.manual_seed(0)
    net = nn.Linear(4, 2)
    step = AdamStep(adam(list(net.parameters()), 1e-3, torch.device("cpu")))
    for _ in range(2):
        backward_on(net, torch.randn(3, 4))
        step()
    assert step._bound is not None


def adam_pair(seed):
    """A 2-layer MLP with a fused Adam as `adam` makes it, and a parameter that never gets a
    gradient (Adam skips it)."""
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(5, 32), nn.ReLU(), nn.Linear(32, 3))
    params = [*net.parameters(), nn.Parameter(torch.ones(4))]
    return net, params, adam(params, 1e-2, torch.device("cpu"))


def test_adam_step_matches_the_optimizers_step_bit_for_bit():
    (net_a, params_a, opt_a), (net_b, params_b, opt_b) = adam_pair(0), adam_pair(0)
    for i in range(6):
        x = torch.randn(17, 5)
        for net, params, opt, step in ((net_a, params_a, opt_a, lambda o: o.step()),
                                       (net_b, params_b, opt_b, adam_step)):
            grad_step(opt, net(x).square().mean(), params, None)
            step(opt)
        if i == 2:  # a state loaded from elsewhere replaces the state tensors
            opt_b.load_state_dict(copy.deepcopy(opt_a.state_dict()))
        for group in (opt_a.param_groups[0], opt_b.param_groups[0]):
            group["lr"] = 1e-2 / (i + 2)  # a schedule changes the lr between steps
    for a, b in zip(params_a, params_b):
        assert torch.equal(a, b)
    state_a, state_b = opt_a.state_dict()["state"], opt_b.state_dict()["state"]
    assert state_a.keys() == state_b.keys() and len(state_a) == 4  # the unused one has none
    for k in state_a:
        for name in ("step", "exp_avg", "exp_avg_sq"):
            assert torch.equal(state_a[k][name], state_b[k][name]), (k, name)
    assert float(state_b[0]["step"]) == 6
