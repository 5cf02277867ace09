"""Small pieces shared by policies: devices, target-network updates, state snapshots."""
from __future__ import annotations

import copy
import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import torch
from torch import nn


def resolve_device(name: str) -> torch.device:
    """"cpu", "cuda", "cuda:1" or "auto" (cuda when available, else cpu) → torch.device."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {name!r} was asked for but CUDA is not available here; "
                           "set device='cpu' or device='auto'.")
    return device


def numpy_rng(seed: Optional[int]) -> np.random.Generator:
    """A NumPy generator seeded with `seed`; when None, with a draw from torch's global RNG, so
    that a script seeded the DI-engine way (`set_pkg_seed(cfg.seed)`, no policy seed) repeats."""
    if seed is None:
        seed = int(torch.randint(2**62, ()).item())
    return np.random.default_rng(seed)


def model_spaces(model: nn.Module, obs_space: Any, action_space: Any,
                 who: str) -> Tuple[Any, Any]:
    """The spaces of a policy built around a user's `model` (DI-engine's
    `Policy(cfg, model=model)`): those passed, else those the model records (`obs_space`,
    `action_space`, as rlpipe.models' networks do); one-line errors when neither says, and when
    both do and differ. `action_space` may stay None for the caller to derive."""
    from rlpipe.data._offline import same_space

    if not isinstance(model, nn.Module):
        raise TypeError(f"{who}(cfg, model=...): the model must be a torch.nn.Module, got a "
                        f"{type(model).__name__}")
    chosen = []
    for name, given in (("obs_space", obs_space), ("action_space", action_space)):
        recorded = getattr(model, name, None)
        if given is not None and recorded is not None and not same_space(given, recorded):
            raise ValueError(f"{who}(cfg, {name}=..., model=...): the model was built for "
                             f"{name} {recorded}, not {given}; build it from the env's spaces")
        chosen.append(given if given is not None else recorded)
    if chosen[0] is None:
        raise TypeError(f"{who}(cfg, model=...): the {type(model).__name__} records no "
                        f"obs_space; pass {who}(cfg, obs_space, action_space, model=model)")
    return chosen[0], chosen[1]


@torch.no_grad()
def hard_update(target: nn.Module, source: nn.Module) -> None:
    """Copy `source`'s parameters and buffers into `target` (devices may differ)."""
    for t, s in zip(target.parameters(), source.parameters()):
        t.copy_(s)
    for t, s in zip(target.buffers(), source.buffers()):
        t.copy_(s)


@torch.no_grad()
def soft_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """Polyak averaging: target ← tau · source + (1 − tau) · target."""
    for t, s in zip(target.parameters(), source.parameters()):
        t.lerp_(s, tau)
    for t, s in zip(target.buffers(), source.buffers()):
        t.copy_(s)


def clone_state(module: nn.Module) -> Dict[str, torch.Tensor]:
    """A detached copy of `module.state_dict()` (a snapshot, not live references)."""
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def learner_state(policy: Any, modules: Sequence[str]) -> Dict[str, Any]:
    """A snapshot of a policy with one optimizer: each named module's weights, the optimizer's
    state, `train_iter` and the exploration RNG (`policy._rng`). The caller holds its weight
    lock; `load_learner_state` restores it."""
    state: Dict[str, Any] = {name: clone_state(getattr(policy, name)) for name in modules}
    state.update(optimizer=copy.deepcopy(policy.optimizer.state_dict()),
                 train_iter=policy.train_iter, rng=copy.deepcopy(policy._rng.bit_generator.state))
    return state


def check_learner_state(policy: Any, state: Mapping[str, Any], modules: Sequence[str]) -> None:
    """Raise `KeyError` naming what `state` lacks to be `learner_state(policy, modules)`'s."""
    missing = sorted({*modules, "optimizer", "train_iter", "rng"} - set(state))
    if missing:
        name = type(policy).__name__
        raise KeyError(f"{name}.load_state_dict: the state lacks {missing}; it must come from "
                       f"{name}.state_dict()")


def load_learner_state(policy: Any, state: Mapping[str, Any], modules: Sequence[str]) -> None:
    """Restore `learner_state(policy, modules)` into `policy` (the caller checked it with
    `check_learner_state` and holds its weight lock)."""
    for name in modules:
        getattr(policy, name).load_state_dict(state[name])
    policy.optimizer.load_state_dict(state["optimizer"])
    policy.train_iter = int(state["train_iter"])
    policy._rng.bit_generator.state = state["rng"]


def adam(params: List[torch.Tensor], lr: float, device: torch.device,
         eps: float = 1e-8) -> torch.optim.Adam:
    """Adam over `params`; the fused kernel where torch has one for `device` (on the CPU it takes
    about a third of the time of the per-tensor loop, which matters for small networks)."""
    return torch.optim.Adam(params, lr=lr, eps=eps, fused=device.type in ("cpu", "cuda"))


def check_td_batch(batch: Mapping[str, Any], algo: str) -> None:
    """Raise `KeyError` naming what a one-step TD learn batch lacks (obs, action, reward,
    next_obs, and terminated or an n-step discount)."""
    missing = [k for k in ("obs", "action", "reward", "next_obs") if k not in batch]
    if "discount" not in batch and "terminated" not in batch:
        missing.append("terminated (or discount)")
    if missing:
        raise KeyError(f"{algo} learn batch lacks {missing}; it has {sorted(batch)}.")


def td_discount(b: Mapping[str, torch.Tensor], gamma: float) -> torch.Tensor:
    """The bootstrap weight of each row: the batch's "discount" (n-step: gamma**m, 0 after a
    termination) or gamma · (1 − terminated). Truncation does not stop the bootstrap."""
    if "discount" in b:
        return b["discount"].float()
    return gamma * (1.0 - b["terminated"].float())


def grad_step(optimizer: torch.optim.Optimizer, loss: torch.Tensor, params: List[torch.Tensor],
              max_norm: Optional[float], norm: bool = False) -> Optional[torch.Tensor]:
    """Backpropagate `loss` and, when `max_norm` is set, clip the gradient norm of `params`.
    With `norm`, return the (pre-clipping) gradient norm, computed also when nothing is clipped.
    The caller runs ``optimizer.step()`` (under its weight lock)."""
    # optimizer.zero_grad(set_to_none=True) without its profiler label and hook patching,
    # which cost more than the assignments themselves at one call per minibatch
    for group in optimizer.param_groups:
        for p in group["params"]:
            p.grad = None
    loss.backward()
    if max_norm is None and not norm:
        return None
    return clip_grad_norm(params, math.inf if max_norm is None else max_norm)


@torch.no_grad()
def clip_grad_norm(params: List[torch.Tensor], max_norm: float) -> torch.Tensor:
    """torch.nn.utils.clip_grad_norm_ (2-norm) for parameters on one device and of one dtype,
    with the same operations, so the same result to the bit: the norm of the per-tensor norms,
    and the gradients scaled by min(max_norm / (norm + 1e-6), 1). It skips torch's grouping of
    the tensors by device and dtype, whose Python costs as much as the arithmetic for a small
    network (one call per minibatch). Returns the norm before clipping."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads, 2.0)), 2.0)
    torch._foreach_mul_(grads, torch.clamp(max_norm / (total + 1e-6), max=1.0))
    return total
