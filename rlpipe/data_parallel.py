"""Data-parallel learning: one training script run as several processes (ranks) by `torchrun`.
Each rank collects its own data and computes gradients on its own batch; before every
optimizer step the gradients are averaged across the ranks, so every rank holds the same
weights. DI-engine's `DDPContext` and `to_ddp_config` (its `apex_dqn_ddp.py`) are these names:

    with DDPContext():                  # joins the ranks torchrun started (gloo on the CPU)
        cfg = to_ddp_config(cfg)        # each rank's share of the batch, and its own seeds
        main(cfg)                       # the single-process script, unchanged

launched as ``torchrun --nproc_per_node=N script.py``. Run as plain ``python script.py`` (no
torchrun variables) the context is one process and changes nothing.

Inside the context:
- a policy joins when its `learn_mode` is first taken: every network of it (parameters and
  buffers) takes rank 0's values, and each of its optimizers averages the gradients across the
  ranks before it steps. rlpipe's learn steps average right after the backward pass, so
  gradient clipping sees the averaged gradient, as in DDP; an optimizer stepped by other code
  averages in a hook that runs before its step.
- what else decides the next step is shared: running normalisers pool the ranks' rows
  (`pooled_moments`), and PPO's approx-KL stop compares the ranks' mean (`mean_across_ranks`).
- checkpoint savers and loggers write on rank 0 only (`is_main_rank()`): the weights are the
  same on every rank, so rank 0's run folder is the run's, and a folder keeps one writer.
- the ranks stop together: a rank whose run is in its last iteration (its evaluator reached
  the stop value, say) tells the others at its gradient exchanges, and they end their runs
  after the same iteration, with the same weights. A rank that has left (it failed, or it
  decided to stop after its learn steps) is seen at the others' next exchange: they average no
  more and end their runs after that iteration. Leaving the context waits for every rank, so
  no rank waits forever on one that stopped.
- a peer that dies (kill -9, out of memory) is seen at the next exchange: the others end their
  runs after that iteration, checkpointed, and `PeerLost` names the cause when they leave the
  context. SIGTERM (what torchrun sends the other ranks when one fails) and SIGINT end the run
  after the current iteration too, checkpointed, with exit status 143 / 130.

Every rank must make the same learn steps in the same order (as the same script on the same
schedule does); a rank whose gradients do not match the others' in size raises an error that
says so rather than averaging unrelated numbers.

torch is imported when a function needs it: `import rlpipe` stays free of it.
"""
from __future__ import annotations

import datetime
import logging
import math
import os
import signal
import threading
from typing import Any, List, Optional, Sequence

log = logging.getLogger(__name__)

__all__ = ["DDPContext", "PeerLost", "average_gradients", "get_rank", "get_world_size",
           "is_main_rank", "join", "mean_across_ranks", "pooled_moments", "to_ddp_config"]

_group: Optional["_Group"] = None  # the ranks of the DDPContext this process is in (world > 1)


class _Group:
    """This process's place among the ranks, and whether a peer has stopped or been lost."""

    def __init__(self, rank: int, world: int) -> None:
        self.rank = rank
        self.world = world
        self.peer_stopped = False  # a peer has left: no more averaging
        self.lost: Optional[str] = None  # why a peer cannot be reached (its process died, say)

    def exchange(self, collective: Any, tensor: Any, what: str, *args: Any) -> bool:
        """`collective(tensor, *args)` (`dist.all_reduce`, `dist.broadcast`) among the ranks:
        True when it completed; False when a peer could not be reached (its process died, or it
        did not answer within the group's timeout). A lost peer makes this rank average no more
        and end its run after the current iteration, so its checkpoint saver still writes the
        weights it holds; `DDPContext` then raises `PeerLost` on leaving."""
        if self.lost is not None:
            return False
        try:
            collective(tensor, *args)
        except RuntimeError as err:  # gloo: "Connection closed by peer", "Timed out ..."
            self.peer_stopped = True
            self.lost = _first_line(err)
            log.warning("data-parallel rank %d: a peer cannot be reached during %s (%s); this "
                        "rank ends its run after this iteration, learning on its own gradients "
                        "until then", self.rank, what, self.lost)
            self._end_run(_running_task(), "a data-parallel peer was lost")
            return False
        return True

    def round(self, size: int, what: str) -> bool:
        """One control exchange before a collective of `size` numbers (of `what`, named in the
        error when the sizes differ): True when every rank is in it with the same size; False
        when a peer has stopped or is lost. Sending size and size² lets each rank check that all
        sizes are equal (their variance is zero) in one exchange. Each rank also says whether
        its run is in its last iteration; a rank told that a peer's is ends its run after this
        iteration too, so the ranks stop together with the same weights."""
        import torch
        import torch.distributed as dist

        task = _running_task()
        finishing = 1.0 if task is not None and task.finish else 0.0
        ctrl = torch.tensor([1.0, size, float(size) * size, finishing], dtype=torch.float64)
        if not self.exchange(dist.all_reduce, ctrl, what):
            return False
        active, total, squares, finishing_ranks = ctrl.tolist()
        if active < self.world:
            if not self.peer_stopped:
                self.peer_stopped = True
                log.info("data-parallel rank %d: a peer has stopped; this rank learns on its own "
                         "gradients until its run ends", self.rank)
            self._end_run(task)
            return False
        if total != self.world * size or squares != self.world * float(size) * size:
            raise RuntimeError(
                f"data-parallel rank {self.rank}: {what} have {size} numbers here and a different "
                f"number on another rank; every rank must build the same networks and make the "
                f"same learn steps in the same order (the same script and config, e.g. the same "
                f"update_per_collect)")
        if finishing_ranks > finishing:
            self._end_run(task)
        return True

    def _end_run(self, task: Any, reason: str = "a data-parallel peer ended its run") -> None:
        if task is not None and not task.finish:
            task.end_run(reason)

    def drain(self) -> None:
        """Answer the peers' control exchanges as stopped until every rank has stopped (or a
        peer is lost: nothing is left to wait for)."""
        import torch
        import torch.distributed as dist

        while self.lost is None:
            ctrl = torch.zeros(4, dtype=torch.float64)
            if not self.exchange(dist.all_reduce, ctrl, "the ranks' last exchange"):
                return
            if ctrl[0].item() == 0.0:
                return


def _first_line(err: Exception) -> str:
    """The first sentence of `err`'s message, without gloo's source location
    ("[.../pair.cc:553] Connection closed by peer [127.0.0.1]:11690. This is typically ...")."""
    text = str(err).strip()
    line = text.splitlines()[0] if text else repr(err)
    if line.startswith("[") and "] " in line:
        line = line[line.index("] ") + 2:]
    return line.split(". ")[0]


def _running_task() -> Any:
    """The task whose run this learn step is part of, or None outside a run."""
    from rlpipe.engine import current_task

    task = current_task()
    return task if task.running else None


def _torchrun_world() -> int:
    raw = os.environ.get("WORLD_SIZE")
    if raw is None:
        return 1
    try:
        world = int(raw)
    except ValueError:
        raise ValueError(f"DDPContext: WORLD_SIZE={raw!r} is not a number of processes; launch "
                         f"the script with torchrun --nproc_per_node=N") from None
    return world


class PeerLost(RuntimeError):
    """A rank of a `DDPContext` could not reach a peer mid-run (its process died, or it did not
    answer within the timeout). Raised when this rank leaves the context, after its run ended
    with that iteration (its checkpoint saver wrote the weights it held)."""


class DDPContext:
    """Join the ranks `torchrun` started (see the module's doc) in a gloo process group, left
    again on exit after every rank has stopped. Outside torchrun (no WORLD_SIZE, or 1) it does
    nothing. `timeout_s` bounds how long a collective waits for a peer before it fails (torch's
    default: 30 minutes).

    Faults: a peer that dies mid-run (kill -9, out of memory) is seen at this rank's next
    exchange; this rank ends its run after that iteration, its checkpoint saver writes the
    weights it holds (rank 0 writes the run folder), and leaving the context raises `PeerLost`
    naming the cause. SIGTERM or SIGINT inside the context (torchrun sends SIGTERM to every
    rank when one fails; Ctrl-C sends SIGINT) also ends the run after the current iteration,
    with its checkpoint, and leaving the context then exits with 128 + the signal's number
    (143, 130); a second one aborts at once.

    Gloo exchanges CPU tensors (the control numbers each exchange starts with are CPU tensors),
    and carries the gradients of a learner on a GPU too; nccl, GPU tensors only, is not used."""

    def __init__(self, timeout_s: float = 1800.0) -> None:
        if not (isinstance(timeout_s, (int, float)) and math.isfinite(timeout_s)
                and timeout_s > 0):
            raise ValueError(f"DDPContext(timeout_s={timeout_s!r}): seconds > 0")
        self.timeout_s = float(timeout_s)
        self._owns_group = False
        self._signals: dict = {}  # the handlers this context replaced, restored on exit
        self._received: Optional[int] = None  # the first SIGTERM / SIGINT

    def __enter__(self) -> "DDPContext":
        global _group
        if _group is not None:
            raise RuntimeError("DDPContext: this process is in a DDPContext already; enter "
                               "it once per process")
        world = _torchrun_world()
        if world <= 1:
            log.info("DDPContext: one process (not launched by torchrun): nothing to average")
            return self
        import torch.distributed as dist

        for name in ("RANK", "MASTER_ADDR", "MASTER_PORT"):
            if name not in os.environ:
                raise RuntimeError(f"DDPContext: WORLD_SIZE={world} but {name} is not set; "
                                   f"launch the script with torchrun --nproc_per_node={world}, "
                                   f"which sets both")
        if not dist.is_initialized():
            _import_before_the_group()
            dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=self.timeout_s))
            self._owns_group = True
        elif dist.get_backend() != "gloo":
            raise RuntimeError(f"DDPContext: this process's group uses {dist.get_backend()}; "
                               f"data-parallel learning exchanges CPU tensors and needs gloo "
                               f"(leave the group to DDPContext)")
        _group = _Group(dist.get_rank(), dist.get_world_size())
        log.info("DDPContext: rank %d of %d (%s)", _group.rank, _group.world,
                 dist.get_backend())
        if threading.current_thread() is threading.main_thread():
            self._signals = {s: signal.signal(s, self._on_signal)
                             for s in (signal.SIGTERM, signal.SIGINT)}
        return self

    def _on_signal(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        task = _running_task()
        if self._received is not None or task is None:
            raise SystemExit(128 + signum)  # a second signal, or none of a run to finish
        self._received = signum
        log.warning("data-parallel rank %d: %s: %s", get_rank(), name,
                    task.end_run_for_signal(signum))

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        global _group
        group, _group = _group, None
        if group is None:
            return
        import torch.distributed as dist

        try:
            group.drain()
        finally:
            if self._owns_group:
                dist.destroy_process_group()
                self._owns_group = False
            for s, handler in self._signals.items():
                signal.signal(s, handler)
            self._signals = {}
        if exc_type is not None:
            return
        if group.lost is not None:
            saved = ("its checkpoint saver wrote the weights it held to the run folder"
                     if group.rank == 0 else
                     "rank 0 writes the run folder (were rank 0 the one lost, its last "
                     "checkpoint there is the newest)")
            raise PeerLost(f"data-parallel rank {group.rank}: a peer could not be reached mid-run "
                           f"({group.lost}); this rank ended its run after that iteration, and "
                           f"{saved}. See the peer's own output for why it stopped")
        if self._received is not None:
            raise SystemExit(128 + self._received)


def _import_before_the_group() -> None:
    """Import `torch.distributed.nn.functional` while no process group exists. Its collectives
    take `group=group.WORLD` as a default argument, evaluated when the module is imported; the
    first optimizer a script builds imports it (through torch._dynamo), and imported while the
    group exists, those defaults would hold the group for the life of the process.
    `destroy_process_group` would then leave gloo's worker threads running into interpreter
    shutdown, where a worker that drops a tensor's last reference takes the GIL and aborts the
    process ("terminate called without an active exception") after the script has ended."""
    import torch.distributed.nn.functional  # noqa: F401  (imported for its defaults only)


def get_rank() -> int:
    """This process's rank in its DDPContext (0 outside one)."""
    return _group.rank if _group is not None else 0


def get_world_size() -> int:
    """The number of ranks in this process's DDPContext (1 outside one)."""
    return _group.world if _group is not None else 1


def is_main_rank() -> bool:
    """True outside a DDPContext and on its rank 0: the process that writes the run folder."""
    return _group is None or _group.rank == 0


def _share(value: Any, world: int) -> Any:
    return None if value is None else max(1, int(math.ceil(value / world)))


def to_ddp_config(cfg: Any) -> Any:
    """`cfg` for this rank, changed in place and returned: the learn batch
    (`policy.learn.batch_size`) and the rows collected per call (`policy.collect.n_sample`,
    `n_episode`) are divided among the ranks (rounded up), so the ranks together learn on the
    batches one process would; and the seeds (`seed`, `policy.seed`) are offset by the rank, so
    each rank explores and collects its own data (equal seeds would make the ranks collect the
    same transitions). Outside a DDPContext it returns `cfg` unchanged."""
    world, rank = get_world_size(), get_rank()
    if world == 1:
        return cfg
    policy = cfg.get("policy") if hasattr(cfg, "get") else None
    if policy is None:
        raise KeyError("to_ddp_config(cfg): the config has no 'policy' section; pass the "
                       "whole config (e.g. get_entry('cartpole-dqn').resolve())")
    for section, key in (("learn", "batch_size"), ("collect", "n_sample"),
                         ("collect", "n_episode")):
        part = policy.get(section)
        if part is not None and part.get(key) is not None:
            part[key] = _share(part[key], world)
    if policy.get("batch_size") is not None:  # DI-engine's flat form
        policy["batch_size"] = _share(policy["batch_size"], world)
    for owner in (cfg, policy):
        if owner.get("seed") is not None:
            owner["seed"] = int(owner["seed"]) + rank
    return cfg


def join(policy: Any) -> None:
    """Make `policy` data-parallel in this process's DDPContext (nothing outside one): its
    networks take rank 0's values and its optimizers average gradients across the ranks.
    Called by `Policy.learn_mode` the first time it is taken, which every rank does at the same
    point of the same script."""
    group = _group
    if group is None or getattr(policy, "_rlpipe_data_parallel", False):
        return
    import torch

    policy._rlpipe_data_parallel = True
    modules: List[Any] = []
    optimizers: List[Any] = []
    seen = set()
    for name in sorted(vars(policy)):
        value = vars(policy)[name]
        if id(value) in seen:
            continue
        if isinstance(value, torch.nn.Module) or (isinstance(value, torch.Tensor)
                                                   and value.requires_grad):
            modules.append(value)  # a bare learned tensor too, e.g. SAC's log alpha
        elif isinstance(value, torch.optim.Optimizer):
            optimizers.append(value)
        else:
            continue
        seen.add(id(value))
    stepped = {id(p) for o in optimizers for g in o.param_groups for p in g["params"]}
    unstepped = [n for n, t in _trainable(modules) if id(t) not in stepped]
    if unstepped:
        raise RuntimeError(
            f"data-parallel {type(policy).__name__}: no optimizer kept as an attribute of the "
            f"policy steps {unstepped[:3]}, so their gradients would not be averaged and the "
            f"ranks' weights would drift apart; keep each optimizer as an attribute "
            f"(self.optimizer = ...)")
    tensors = [t for m in modules
               for t in ([m] if isinstance(m, torch.Tensor)
                         else m.state_dict(keep_vars=True).values())
               if isinstance(t, torch.Tensor) and t.is_floating_point()]
    _broadcast_from_rank0(group, tensors)
    for optimizer in optimizers:
        optimizer._rlpipe_averaged = False
        optimizer.register_step_pre_hook(_average_before_step)
    log.info("data-parallel rank %d: %s joined (%d networks, %d optimizers)", group.rank,
             type(policy).__name__, len(modules), len(optimizers))


def _trainable(modules: Sequence[Any]) -> List[Any]:
    """(name, tensor) of every tensor of `modules` that learns (requires a gradient)."""
    import torch

    found = []
    for i, m in enumerate(modules):
        named = ([(f"tensor {i}", m)] if isinstance(m, torch.Tensor)
                 else [(f"{type(m).__name__}.{n}", p) for n, p in m.named_parameters()])
        found += [(n, t) for n, t in named if t.requires_grad]
    return found


def _broadcast_from_rank0(group: _Group, tensors: Sequence[Any]) -> None:
    import torch
    import torch.distributed as dist

    size = sum(t.numel() for t in tensors)
    if not tensors or not group.round(size, "the policy's networks"):
        return
    with torch.no_grad():
        # on the CPU, in float64 (exact for every float type): a policy's networks may live
        # on different devices (an acting copy on the CPU beside a learner on a GPU)
        flat = torch.cat([t.detach().reshape(-1).to("cpu", torch.float64) for t in tensors])
        if not group.exchange(dist.broadcast, flat, "rank 0's networks", 0):
            return
        offset = 0
        for t in tensors:
            n = t.numel()
            t.copy_(flat[offset:offset + n].view_as(t))
            offset += n


def average_gradients(optimizer: Any) -> None:
    """Average the gradients of `optimizer`'s parameters across the ranks, if it belongs to a
    joined policy (nothing otherwise). Learn steps call it after the backward pass; the
    optimizer's step then does not average again."""
    if _group is None or not hasattr(optimizer, "_rlpipe_averaged"):
        return
    _average(optimizer)
    optimizer._rlpipe_averaged = True


def _average_before_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    if optimizer._rlpipe_averaged:
        optimizer._rlpipe_averaged = False
        return
    if _group is not None:
        _average(optimizer)


def _average(optimizer: Any) -> None:
    import torch
    import torch.distributed as dist

    group = _group
    assert group is not None
    grads = [p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
    size = sum(g.numel() for g in grads)
    if not group.round(size, "the gradients of this optimizer step") or not grads:
        return
    with torch.no_grad():
        flat = torch.cat([g.reshape(-1) for g in grads])
        if not group.exchange(dist.all_reduce, flat, "the gradients"):
            return
        flat.div_(group.world)
        for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
            g.copy_(piece.view_as(g))


def mean_across_ranks(value: Any, what: str) -> Any:
    """`value` (a number or a one-element tensor) averaged over the ranks, as a float; `value`
    itself outside a DDPContext, or once a peer has stopped. For a statistic that decides what
    every rank does next, such as the approx-KL that ends PPO's epochs early, so that all ranks
    decide alike and stay in step."""
    group = _group
    if group is None or not group.round(1, what):
        return value
    import torch
    import torch.distributed as dist

    total = torch.tensor([float(value)], dtype=torch.float64)
    if not group.exchange(dist.all_reduce, total, what):
        return value
    return total.item() / group.world


def pooled_moments(n: int, mean: Any, var: Any) -> Any:
    """(n, mean, var) of one batch (population variance, float64 tensors) pooled with the other
    ranks' batches: the count, mean and variance of all the ranks' rows together, so running
    statistics (an observation normaliser) stay the same on every rank. Unchanged outside a
    DDPContext, or once a peer has stopped."""
    group = _group
    if group is None or not group.round(1 + 2 * mean.numel(), "the batch statistics"):
        return n, mean, var
    import torch
    import torch.distributed as dist

    if n == 0:  # an empty batch adds nothing (its mean and variance are not numbers)
        mean, var = torch.zeros_like(mean), torch.zeros_like(var)
    sums = torch.cat([torch.tensor([float(n)], dtype=torch.float64, device=mean.device),
                      (n * mean).reshape(-1), (n * (var + mean * mean)).reshape(-1)])
    if not group.exchange(dist.all_reduce, sums, "the batch statistics"):
        return n, mean, var
    total = int(sums[0].item())
    if total == 0:
        return 0, mean, var
    d = mean.numel()
    pooled_mean = (sums[1:1 + d] / total).reshape(mean.shape)
    pooled_var = (sums[1 + d:] / total).reshape(mean.shape) - pooled_mean * pooled_mean
    return total, pooled_mean, pooled_var.clamp_min(0.0)
