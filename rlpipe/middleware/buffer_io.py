"""Moving data between the context and a replay buffer."""
from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import numpy as np

from rlpipe.contexts import OnlineRLContext
from rlpipe.data import NStepAccumulator, PrioritizedReplayBuffer
from rlpipe.engine import Role, contract

from ._cfg import setting

log = logging.getLogger(__name__)


def concat_steps(steps: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """Per-step dicts of [n_envs] arrays → one dict of transition rows, `valid` rows only."""
    if not steps:
        return None
    merged = {key: _concat([s[key] for s in steps]) for key in steps[0]}
    valid = merged.pop("valid", None)
    if valid is not None and not valid.all():
        merged = _take(merged, np.flatnonzero(valid))
    return merged


def _concat(values: List[Any]) -> Any:
    if isinstance(values[0], dict):
        return {k: _concat([v[k] for v in values]) for k in values[0]}
    return np.concatenate([np.asarray(v) for v in values]) if values[0].ndim else np.asarray(values)


def _take(batch: Dict[str, Any], rows: np.ndarray) -> Dict[str, Any]:
    return {k: _take(v, rows) if isinstance(v, dict) else v[rows] for k, v in batch.items()}


def data_pusher(cfg: Any, buffer_: Any, group_by_env: Optional[bool] = None) -> Callable:
    """Push this iteration's transitions (`ctx.trajectories`) into `buffer_`.

    `group_by_env=True` (DI-engine's option, which pushes each transition with the meta
    `{'env': env_id}`) adds an int64 `env_id` column to every row: which env of the manager
    produced it, so a sampled batch says where each transition came from. Choose it once per
    buffer: the buffer's layout is fixed by its first push.

    Transitions that carry a `priority` (from `priority_calculator`, APE-X's priorities
    computed by the collectors) enter a `PrioritizedReplayBuffer` with those priorities
    rather than the largest one seen; any other buffer is refused, since it would store the
    priorities as data and never sample by them.
    """
    tag_envs = bool(group_by_env)

    @contract(reads=("trajectories",), writes=(), role=Role.LEARNER)
    def _data_pusher(ctx: OnlineRLContext) -> None:
        steps = ctx.trajectories or []
        if tag_envs:
            steps = [_with_env_id(step) for step in steps]
        batch = concat_steps(steps)
        if batch is None or not len(batch["reward"]):
            return
        if "priority" not in batch:
            buffer_.push(batch)
            return
        if not isinstance(buffer_, PrioritizedReplayBuffer):
            raise TypeError(f"data_pusher: the transitions carry priorities (priority_calculator) "
                            f"but the buffer is a {type(buffer_).__name__}, which samples "
                            f"uniformly; use rlpipe.data.PrioritizedReplayBuffer")
        priority = batch.pop("priority")
        buffer_.push(batch, priority=priority)

    return _data_pusher


def priority_calculator(priority_calculation_fn: Optional[Callable] = None, *,
                        func_for_priority_calculation: Optional[Callable] = None) -> Callable:
    """DI-engine's APE-X middleware: give each collected transition its replay priority where
    it was collected. `priority_calculation_fn(ctx.trajectories)` returns one entry per step
    of `ctx.trajectories` (each an array with a value per env of that step, as
    `DQNPolicy.calculate_priority(ctx.trajectories)["priority"]` gives); the step then carries
    it as `priority`, which `data_pusher` hands to a `PrioritizedReplayBuffer`. In a process
    started by `parallel.launch` it runs in collectors only, so the priorities travel with the
    trajectories to the learner. `func_for_priority_calculation` is the same argument under
    the name of DI-engine's first release."""
    if (priority_calculation_fn is None) == (func_for_priority_calculation is None):
        raise TypeError("priority_calculator: pass the priority function once, as "
                        "priority_calculation_fn=fn (or DI-engine's older "
                        "func_for_priority_calculation=fn)")
    calculate = priority_calculation_fn or func_for_priority_calculation

    @contract(reads=("trajectories",), writes=("trajectories",), role=Role.COLLECTOR)
    def _priority_calculator(ctx: OnlineRLContext) -> None:
        steps = ctx.trajectories or []
        if not steps:
            return
        priority = list(calculate(steps))
        if len(priority) != len(steps):
            raise ValueError(f"priority_calculator: the priority function returned "
                             f"{len(priority)} entries for {len(steps)} steps of "
                             f"ctx.trajectories; return one per step")
        out = []
        for step, p in zip(steps, priority):
            p = np.asarray(p, dtype=np.float32).reshape(-1)
            if len(p) != len(step["reward"]):
                raise ValueError(f"priority_calculator: a step of {len(step['reward'])} "
                                 f"transitions got {len(p)} priorities; return one per "
                                 f"transition (env) of each step")
            out.append({**step, "priority": p})
        ctx.trajectories = out

    return _priority_calculator


def offline_data_saver(*args: Any, data_type: str = "hdf5") -> Callable:
    """Write this iteration's transitions (`ctx.trajectories`, valid rows) to `data_path`,
    replacing what an earlier iteration wrote there: DI-engine's way of saving demonstrations
    (`task.use(offline_data_saver(path)); task.run(max_step=1)`). `data_type`: "hdf5" (one
    data set per column, nested columns as groups; needs h5py) or "npz" (nested columns as
    "obs/key" names) or "naive" (a pickle of the rows dict). The file is written whole or not
    at all. Both of DI-engine's forms: `offline_data_saver(data_path, data_type)` and
    `offline_data_saver(cfg, data_path, data_type)` (the config is not needed)."""
    import pickle

    from ._io import atomic_write

    if len(args) == 3 or (len(args) == 2 and isinstance(args[0], Mapping)):
        args = args[1:]  # DI-engine's (cfg, data_path, ...)
    if len(args) == 2:
        args, data_type = args[:1], args[1]
    if len(args) != 1:
        raise TypeError(f"offline_data_saver takes (data_path, data_type='hdf5') or (cfg, "
                        f"data_path, data_type='hdf5'); got {len(args)} positional arguments")
    data_path = args[0]
    if data_type not in ("hdf5", "npz", "naive"):
        raise ValueError(f"offline_data_saver(data_type={data_type!r}): choose 'hdf5', 'npz' "
                         f"or 'naive' (pickle)")
    if data_type == "hdf5":
        try:
            import h5py
        except ImportError as err:
            raise ImportError(f"offline_data_saver(data_type='hdf5') needs h5py ({err}): pip "
                              f"install h5py, or pass data_type='npz'") from err

    def _columns(batch: Dict[str, Any], prefix: str = "") -> Dict[str, np.ndarray]:
        out: Dict[str, np.ndarray] = {}
        for key, value in batch.items():
            if isinstance(value, dict):
                out.update(_columns(value, f"{prefix}{key}/"))
            else:
                out[f"{prefix}{key}"] = np.asarray(value)
        return out

    def _write(f: Any, columns: Dict[str, np.ndarray]) -> None:
        if data_type == "npz":
            np.savez(f, **columns)
            return
        if data_type == "naive":
            pickle.dump(columns, f)
            return
        with h5py.File(f, "w") as h5:
            for name, values in columns.items():
                h5.create_dataset(name, data=values)

    @contract(reads=("trajectories",), writes=(), role=Role.LEARNER)
    def _offline_data_saver(ctx: OnlineRLContext) -> None:
        batch = concat_steps(ctx.trajectories or [])
        if batch is None or not len(batch["reward"]):
            return
        columns = _columns(batch)
        atomic_write(data_path, lambda f: _write(f, columns))
        log.info("offline_data_saver: %d transitions written to %s", len(batch["reward"]),
                 data_path)

    return _offline_data_saver


def _with_env_id(step: Dict[str, Any]) -> Dict[str, Any]:
    if "env_id" in step:
        raise KeyError("data_pusher(group_by_env=True): the collected step already has an "
                       "'env_id' key; drop group_by_env or rename that key")
    return {**step, "env_id": np.arange(len(step["reward"]), dtype=np.int64)}


def nstep_reward_enhancer(cfg: Any) -> Callable:
    """Turn one-step transitions into n-step ones (`cfg.policy.learn.nstep`, gamma `...gamma`).

    Each output row carries `discount` (gamma**m, or 0 when the episode terminated inside the
    window); rows of episodes that are still open wait for later iterations.

    A recurrent policy's steps (they record `state`) pass unchanged: its learner computes the
    n-step targets on the sampled sequences (R2D2Policy, with the same `policy.learn.nstep`),
    which need every step in time order (DI-engine's R2D2 chain runs this middleware too).
    """
    n = int(setting(cfg, "policy.learn.nstep"))
    gamma = float(setting(cfg, "policy.learn.gamma"))
    accumulators: Dict[int, NStepAccumulator] = {}
    logged = []

    @contract(reads=("trajectories",), writes=("trajectories",), role=Role.COLLECTOR)
    def _nstep(ctx: OnlineRLContext) -> None:
        steps = ctx.trajectories or []
        if not steps:
            return
        if "state" in steps[0]:
            if not logged:
                logged.append(True)
                log.info("nstep_reward_enhancer: recurrent steps pass unchanged; the learner "
                         "computes %d-step targets on its sequences", n)
            return
        n_envs = len(steps[0]["reward"])
        acc = accumulators.get(n_envs)
        if acc is None:
            acc = accumulators[n_envs] = NStepAccumulator(n, gamma, n_envs)
        out = [done for done in (acc.push(step) for step in steps) if done]
        ctx.trajectories = [o for o in out if len(o["reward"])]

    return _nstep


def offpolicy_data_fetcher(cfg: Any, buffer_: Any) -> Callable:
    """Sample `cfg.policy.learn.batch_size` transitions into `ctx.train_data`; after the
    learner ran, write the new priorities back when the buffer is prioritized.

    The fetch half of the one learning path: `OffPolicyLearner` runs it around `trainer` for
    each update its schedule allows. Another fetcher (offline data, sequences) has the same
    shape: fill `train_data` (None when nothing can be fetched) before one `yield`."""
    batch_size = int(setting(cfg, "policy.learn.batch_size"))

    @contract(reads=(), writes=("train_data",), reads_after=("train_output",), role=Role.LEARNER)
    def _fetcher(ctx: OnlineRLContext):
        if len(buffer_) < batch_size:
            ctx.train_data = None
            yield
            return
        ctx.train_data = buffer_.sample(batch_size)
        yield
        output = ctx.train_output
        if isinstance(output, dict) and "priority" in output and hasattr(buffer_, "update_priority"):
            buffer_.update_priority(ctx.train_data["index"], output["priority"])

    return _fetcher


def buffer_shares(cfg: Any, buffers: Any) -> List[Tuple[Any, int]]:
    """DI-engine's multi-buffer form `[(buffer, fraction), ...]` as `(buffer, rows per batch)`:
    `int(batch_size * fraction)` rows from each (as DI-engine samples them). One-line errors
    for a bare list of buffers, a dict of buffers (its keyed batches fit no rlpipe policy), a
    share under one row and a buffer with its own update schedule (the list has one)."""
    where = "OffPolicyLearner(cfg, policy, [(buffer, fraction), ...])"
    if isinstance(buffers, dict):
        raise TypeError(f"{where}: a dict of buffers (keyed batches) is not supported: no rlpipe "
                        f"policy trains on keyed batches; pass a list of (buffer, fraction) pairs")
    batch_size = int(setting(cfg, "policy.learn.batch_size"))
    shares = []
    for k, pair in enumerate(buffers):
        if not (isinstance(pair, tuple) and len(pair) == 2 and hasattr(pair[0], "sample")):
            raise TypeError(f"{where}: item {k} is a {type(pair).__name__}, not a (buffer, "
                            f"fraction) pair; e.g. [(buffer_a, 0.5), (buffer_b, 0.5)]")
        buffer_, fraction = pair
        rows = int(batch_size * float(fraction))
        if rows < 1:
            raise ValueError(f"{where}: item {k}'s fraction {fraction!r} of batch_size "
                             f"{batch_size} is under one row; raise it")
        if getattr(buffer_, "controller", None) is not None:
            raise ValueError(f"{where}: item {k}'s buffer has its own update schedule "
                             f"(controller); the list is trained by update_per_collect alone: "
                             f"build its buffers without a controller")
        shares.append((buffer_, rows))
    if not shares:
        raise ValueError(f"{where}: the list of buffers is empty")
    return shares


def multi_buffer_fetcher(shares: List[Tuple[Any, int]]) -> Callable:
    """Each buffer's rows sampled and concatenated (in list order) into one `ctx.train_data`;
    None while any buffer holds fewer rows than its share. After the update, new priorities
    go back, slice by slice, to the buffers that are prioritized."""

    @contract(reads=(), writes=("train_data",), reads_after=("train_output",), role=Role.LEARNER)
    def _multi_fetcher(ctx: OnlineRLContext):
        if any(len(buffer_) < rows for buffer_, rows in shares):
            ctx.train_data = None
            yield
            return
        batches = [buffer_.sample(rows) for buffer_, rows in shares]
        keys = set(batches[0])
        for k, batch in enumerate(batches[1:], 1):
            if set(batch) != keys:
                raise KeyError(f"OffPolicyLearner: buffer {k} samples columns {sorted(batch)}, "
                               f"buffer 0 {sorted(keys)}; the buffers of one learner must hold "
                               f"the same columns (same collector, same prioritization)")
        ctx.train_data = {key: _concat([b[key] for b in batches]) for key in batches[0]}
        yield
        output = ctx.train_output
        if not (isinstance(output, dict) and "priority" in output):
            return
        start = 0
        for (buffer_, rows), batch in zip(shares, batches):
            if hasattr(buffer_, "update_priority") and "index" in batch:
                buffer_.update_priority(batch["index"], output["priority"][start:start + rows])
            start += rows

    return _multi_fetcher
