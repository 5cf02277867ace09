"""Small pieces shared by policies: devices, target-network updates, state snapshots."""
from __future__ import annotations

import copy
import math
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import torch
from torch import nn
from torch.optim.optimizer import _global_optimizer_post_hooks as _GLOBAL_POST_HOOKS
from torch.optim.optimizer import _global_optimizer_pre_hooks as _GLOBAL_PRE_HOOKS

from rlpipe import random_streams
from rlpipe.data_parallel import average_gradients
from rlpipe.random_streams import COLLECT, seed_or_draw


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
    """The NumPy generator of a policy's acting (exploration): the COLLECT stream of `seed`
    (`rlpipe.random_streams`), or of a draw from torch's global RNG when `seed` is None."""
    return random_streams.numpy_rng(seed_or_draw(seed), COLLECT)


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


class AdamStep:
    """`optimizer.step()` for a plain fused Adam on the CPU (as `adam()` makes it: one
    parameter group, no weight decay, amsgrad or maximize), calling torch's fused kernel with
    the arguments `Adam.step` gives it, so the same parameters and state to the bit.

    `Adam.step` spends most of a small network's step around the kernel: its profiler range and
    hooks, regathering the parameters, gradients and moments from its state on every call, and
    one add per parameter (with a scalar-to-tensor copy each) to count the steps. Here the lists
    are gathered once and the step counters of the state are views of one tensor, counted up
    with one add. The lists are gathered again when the state was replaced
    (`optimizer.load_state_dict`). Anything else (a hook, another optimizer or setting, a
    parameter without a gradient, the first step, which creates the state) goes to
    `optimizer.step()`."""

    __slots__ = ("optimizer", "_bound")

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        self.optimizer = optimizer
        self._bound: Optional[Tuple[Any, ...]] = None  # (params, moments, squares, steps, counts)

    def __call__(self) -> None:
        opt = self.optimizer
        bound = self._bound
        if bound is None or opt.state.get(bound[0][0], {}).get("step") is not bound[3][0]:
            bound = self._bound = self._bind()
        if (bound is None or opt._optimizer_step_pre_hooks or opt._optimizer_step_post_hooks
                or _GLOBAL_PRE_HOOKS or _GLOBAL_POST_HOOKS):
            opt.step()
            return
        params, exp_avgs, exp_avg_sqs, steps, counts = bound
        grads = [p.grad for p in params]
        if any(g is None for g in grads):
            opt.step()
            return
        group = opt.param_groups[0]
        beta1, beta2 = group["betas"]
        with torch.no_grad():
            counts.add_(1)
            torch._fused_adam_(params, grads, exp_avgs, exp_avg_sqs, [], steps, amsgrad=False,
                               lr=group["lr"], beta1=beta1, beta2=beta2,
                               weight_decay=group["weight_decay"], eps=group["eps"],
                               maximize=False, grad_scale=None, found_inf=None)

    def _bind(self) -> Optional[Tuple[Any, ...]]:
        """The lists the kernel takes, with the step counters made views of one tensor; None
        when this optimizer or its state is not one the direct call covers."""
        opt = self.optimizer
        if type(opt) is not torch.optim.Adam or len(opt.param_groups) != 1:
            return None
        group = opt.param_groups[0]
        if (not group["fused"] or group["amsgrad"] or group["maximize"] or group["capturable"]
                or group["differentiable"] or group["weight_decay"]
                or group.get("decoupled_weight_decay") or isinstance(group["lr"], torch.Tensor)):
            return None
        params = list(group["params"])
        states = [opt.state.get(p) for p in params]
        if not params or any(not s for s in states) or not all(
                p.device.type == "cpu" and p.dtype == torch.float32 and type(p.data) is
                torch.Tensor for p in params):
            return None
        steps = [s["step"] for s in states]
        if any(t.shape != () or t.dtype != torch.float32 or t.device.type != "cpu"
               for t in steps):
            return None
        counts = torch.stack(steps)
        views = list(counts.unbind())
        for state, view in zip(states, views):
            state["step"] = view
        return (params, [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states],
                views, counts)


def adam_step(optimizer: torch.optim.Optimizer) -> None:
    """`optimizer.step()` through the optimizer's own `AdamStep`, made at its first call and
    kept on the optimizer (so an algorithm steps each optimizer by name, as with `step()`)."""
    stepper = getattr(optimizer, "_rlpipe_adam_step", None)
    if stepper is None:
        stepper = optimizer._rlpipe_adam_step = AdamStep(optimizer)  # type: ignore[attr-defined]
    stepper()


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
    terminated = b["terminated"]
    if terminated.dtype == torch.bool:
        # gamma · (1 − x) is exactly 0 or float32(gamma) for x in {0, 1}: one op instead of
        # three (cast, subtract, scale), which shows in a small network's update
        return torch.where(terminated, 0.0, gamma).float()
    return gamma * (1.0 - terminated.float())


def grad_step(optimizer: torch.optim.Optimizer, loss: torch.Tensor, params: List[torch.Tensor],
              max_norm: Optional[float], norm: bool = False) -> Optional[torch.Tensor]:
    """Backpropagate `loss` and, when `max_norm` is set, clip the gradient norm of `params`.
    With `norm`, return the (pre-clipping) gradient norm, computed also when nothing is clipped.
    In a data-parallel run the gradients are averaged across the ranks before they are
    clipped. The caller runs ``optimizer.step()`` (under its weight lock)."""
    clear_grads(optimizer)
    loss.backward()
    average_gradients(optimizer)
    if max_norm is None and not norm:
        return None
    return clip_grad_norm(params, max_norm)


def clear_grads(*optimizers: torch.optim.Optimizer) -> None:
    """What `optimizer.zero_grad(set_to_none=True)` does, without the profiler range and the
    dynamo guard it enters on every call (about 20 µs a call here, most of its time)."""
    for optimizer in optimizers:
        for group in optimizer.param_groups:
            for p in group["params"]:
                p.grad = None


def joint_grad_step(loss: torch.Tensor, optimizers: Sequence[torch.optim.Optimizer],
                    params: Sequence[List[torch.Tensor]], max_norm: Optional[float]) -> None:
    """`grad_step` for losses of networks that share no parameter, summed into `loss`: one
    backward pass gives each network the gradient of its own loss (the others' do not reach
    it), then each parameter list is clipped on its own. One pass instead of one per network
    saves the autograd engine's start-up, and it is the only way to backpropagate through
    losses that one compiled graph returned together. The caller steps the optimizers."""
    clear_grads(*optimizers)
    loss.backward()
    for optimizer in optimizers:
        average_gradients(optimizer)
    if max_norm is not None:
        for group in params:
            clip_grad_norm(group, max_norm)


def compile_learn(fn: Callable, enabled: bool, who: str) -> Callable:
    """`fn` (a learner's loss computation: tensors in, tensors out, no RNG draw and no host
    sync inside) as it is, or with `enabled` (`policy.learn.compile`) through `torch.compile`,
    so that its forward and the backward that autograd derives from it run as fused kernels
    (inductor; on the CPU, C++ built with the machine's compiler). Compilation happens at the
    first call; a failure there is one error that says how to go without it."""
    if not enabled:
        return fn
    import shutil

    import torch._dynamo
    import torch._inductor.config

    hint = f"set policy.learn.compile=False to train {who} without compilation"
    if not torch._dynamo.is_dynamo_supported():
        raise RuntimeError(f"{who}: policy.learn.compile=True needs torch.compile, which this "
                           f"Python/torch build does not support; {hint}")
    cxx = [c for c in torch._inductor.config.cpp.cxx if c]
    if not any(shutil.which(c) for c in cxx):
        raise RuntimeError(f"{who}: policy.learn.compile=True needs a C++ compiler for "
                           f"torch.compile on the CPU and none of {cxx} is on PATH; install "
                           f"one (e.g. g++) or {hint}")
    # No guards on the networks: a policy's compiled functions always see the same modules in
    # the same state (a function that runs with frozen critics always runs with them frozen),
    # and checking every parameter on every call costs more than a small network's fused
    # kernels save (a 64-wide TD3+BC step: 0.92× eager with those guards, 1.07× without).
    # fullgraph: the whole function is one graph or compilation fails (a graph break would
    # leave pieces running eagerly between compiled ones, slower than no compilation at all).
    compiled = torch.compile(
        fn, fullgraph=True,
        options={"guard_filter_fn": torch.compiler.skip_guard_on_all_nn_modules_unsafe})

    def run(*args: Any) -> Any:
        try:
            return compiled(*args)
        except (torch._dynamo.exc.BackendCompilerFailed, torch._dynamo.exc.Unsupported) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else ""
            raise RuntimeError(f"{who}: torch.compile failed on the learn step "
                               f"({type(err).__name__}: {first}); {hint}") from err

    return run


def clip_grad_norm(params: List[torch.Tensor], max_norm: Optional[float]) -> torch.Tensor:
    """`torch.nn.utils.clip_grad_norm_(params, max_norm)` (None: no limit, the norm only) with
    the same ops in the same order, so the same norm and gradients to the bit. When the
    gradients are plain tensors of one dtype on the CPU or one GPU, as a network's are, it runs
    those ops directly: torch's function regroups the gradients by device and dtype and
    enters no-grad mode three times on every call, about half its time on a small network.
    Other gradients go to torch's function."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads or not _one_foreach_group(grads):
        return torch.nn.utils.clip_grad_norm_(params, math.inf if max_norm is None else max_norm)
    with torch.no_grad():
        total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads, 2.0)), 2.0)
        if max_norm is not None:  # with no limit the factor is min(inf, 1) = 1: nothing changes
            factor = torch.clamp(float(max_norm) / (total + 1e-6), max=1.0)
            # x · 1.0 is x to the bit, so a norm within the limit leaves the gradients as they
            # are; on the CPU reading the factor costs less than one multiply per tensor (on a
            # GPU it would wait for the device)
            if grads[0].device.type != "cpu" or factor.item() != 1.0:
                torch._foreach_mul_(grads, factor)
    return total


def _one_foreach_group(grads: List[torch.Tensor]) -> bool:
    """Whether torch's clipping would treat `grads` as one group on its foreach path."""
    device, dtype = grads[0].device, grads[0].dtype
    return device.type in ("cpu", "cuda") and all(
        type(g) is torch.Tensor and g.device == device and g.dtype == dtype for g in grads)
