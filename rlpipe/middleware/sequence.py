"""Sequence replay in the pipeline (recurrent off-policy learners such as R2D2).

- `SequenceAdding` (collector side, like `nstep_reward_enhancer`): feeds the collector's step
  records (`ctx.trajectories`, with `first` and `state`) into a `SequenceAdder` per env
  manager and leaves the sequences they completed in `ctx.trajectories` (a list of dicts with a
  leading sequence axis). Its open windows belong to the collector's state, so an exact resume
  saves them with it (`state_dict()`).
- `sequence_pusher` (learner side, like `data_pusher`): pushes those sequences into a
  `SequenceReplayBuffer`. In a distributed run the collectors cut sequences and the learner
  pushes what arrives.
- `sequence_fetcher`: a fetcher for `OffPolicyLearner(cfg, policy, buffer, fetcher=...)`: a
  batch of sequences in `ctx.train_data`; after the update, per-sequence priorities from the
  policy's `"priority"` ([B, seq_len] TD errors) on the steps the mask marks valid.

Settings: `policy.learn.seq_len`, `burn_in`, `stride` and `batch_size`.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional

import numpy as np

from rlpipe.contexts import OnlineRLContext
from rlpipe.data import SequenceAdder
from rlpipe.engine import Role, contract

from ._cfg import setting

__all__ = ["SequenceAdding", "sequence_fetcher", "sequence_pusher"]


@contract(reads=("trajectories",), writes=("trajectories",), role=Role.COLLECTOR)
class SequenceAdding:
    """Step records → sequences of `burn_in + seq_len` steps (`stride` apart), per env."""

    def __init__(self, cfg: Any) -> None:
        self.seq_len = int(setting(cfg, "policy.learn.seq_len"))
        self.burn_in = int(setting(cfg, "policy.learn.burn_in"))
        self.stride = int(setting(cfg, "policy.learn.stride"))
        self.adder: Optional[SequenceAdder] = None
        self._saved: Optional[Dict[str, Any]] = None  # a state loaded before the first step

    def __call__(self, ctx: OnlineRLContext) -> None:
        steps = ctx.trajectories or []
        if not steps:
            return
        adder = self._adder(len(steps[0]["reward"]))
        out: List[Dict[str, Any]] = []
        for step in steps:
            done = adder.add(step)
            if done is not None:
                out.append(done)
        ctx.trajectories = out

    def _adder(self, n_envs: int) -> SequenceAdder:
        if self.adder is None:
            self.adder = SequenceAdder(self.seq_len, self.burn_in, self.stride, n_envs)
            if self._saved is not None:
                self.adder.load_state_dict(self._saved)
                self._saved = None
        elif self.adder.n_envs != n_envs:
            raise ValueError(f"SequenceAdding: steps of {n_envs} envs after steps of "
                             f"{self.adder.n_envs}; use one SequenceAdding per env manager")
        return self.adder

    def state_dict(self) -> Optional[Dict[str, Any]]:
        """The open windows (None before the first step)."""
        if self.adder is None:
            return self._saved
        return self.adder.state_dict()

    def load_state_dict(self, state: Optional[Mapping[str, Any]]) -> None:
        """Restore `state_dict()`; None (or a run saved without one) starts empty windows."""
        if state is None:
            self._saved = None
            if self.adder is not None:
                self.adder.clear()
            return
        if self.adder is None:
            self._saved = dict(state)
        else:
            self.adder.load_state_dict(state)


def sequence_pusher(cfg: Any, buffer_: Any) -> Callable:
    """Push the sequences in `ctx.trajectories` (what `SequenceAdding` made) into `buffer_`."""

    @contract(reads=("trajectories",), writes=(), role=Role.LEARNER)
    def _sequence_pusher(ctx: OnlineRLContext) -> None:
        batches = ctx.trajectories or []
        for seqs in batches:
            if not isinstance(seqs, Mapping) or "mask" not in seqs:
                raise TypeError("sequence_pusher: ctx.trajectories must hold sequences (dicts "
                                "with 'mask', as SequenceAdding makes them); put SequenceAdding "
                                "between the collector and sequence_pusher")
        if batches:
            buffer_.push(_concat(batches))

    return _sequence_pusher


def _concat(parts: List[Any]) -> Any:
    if isinstance(parts[0], Mapping):
        return {k: _concat([p[k] for p in parts]) for k in parts[0]}
    return np.concatenate([np.asarray(p) for p in parts])


def sequence_fetcher(cfg: Any, buffer_: Any) -> Callable:
    """Sample `policy.learn.batch_size` sequences into `ctx.train_data`; after the update, set
    their priorities from `ctx.train_output["priority"]` when the buffer is prioritized."""
    batch_size = int(setting(cfg, "policy.learn.batch_size"))

    @contract(reads=(), writes=("train_data",), reads_after=("train_output",), role=Role.LEARNER)
    def _sequence_fetcher(ctx: OnlineRLContext):
        if len(buffer_) < batch_size:
            ctx.train_data = None
            yield
            return
        batch = ctx.train_data = buffer_.sample(batch_size)
        yield
        output = ctx.train_output
        if isinstance(output, dict) and "priority" in output and buffer_.prioritized:
            td = np.asarray(output["priority"])
            mask = batch["mask"] if td.shape[1:] == batch["mask"].shape[1:] \
                else batch["mask"][:, batch["burn_in"]:]
            buffer_.update_priority(batch["index"], td, mask)

    return _sequence_fetcher
