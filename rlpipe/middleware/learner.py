"""Learners: run the policy's update on fetched data and count train iterations."""
from __future__ import annotations

import logging
import math
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from rlpipe.contexts import OnlineRLContext
from rlpipe.data import UpdateSchedule
from rlpipe.engine import Role, contract

from ._cfg import setting
from .buffer_io import buffer_shares, multi_buffer_fetcher, offpolicy_data_fetcher

log = logging.getLogger(__name__)


class NonFiniteLossError(FloatingPointError):
    """A training step produced a NaN or infinite loss."""


def check_finite(stats: Dict[str, Any], where: str, train_iter: int) -> None:
    """Raise naming the loss term when a scalar training statistic is NaN or infinite."""
    for key, value in stats.items():
        if isinstance(value, (float, int, np.floating)) and not math.isfinite(value):
            raise NonFiniteLossError(
                f"{where}: '{key}' is {value} at train_iter {train_iter}. Lower the learning "
                f"rate, enable gradient clipping (policy.learn.grad_clip), or check rewards "
                f"and observations for NaN; the last checkpoint holds finite weights."
            )


def mean_stats(outputs: List[Dict[str, Any]]) -> Dict[str, float]:
    """Average the scalar statistics of several updates."""
    keys = [k for k, v in outputs[0].items() if np.isscalar(v)]
    return {k: float(np.mean([o[k] for o in outputs])) for k in keys}


def trainer(cfg: Any, policy: Any = None, log_freq: Optional[int] = None, *,
            name: str = "trainer") -> Callable:
    """Hand `ctx.train_data` to `policy.forward` (a learn face); `ctx.train_output` = the
    statistics it returns; `train_iter` advances by the gradient steps it reports as
    "n_updates" (1 when it reports none). Skipped when train_data is None.

    The one update path of every pipeline: `OffPolicyLearner` runs it after its fetcher (one
    batch, one step), the offline pipeline after `offline_data_fetcher`, and the on-policy one as
    `multistep_trainer` (a whole rollout, on which the policy runs its own epochs of minibatch
    steps). A NaN or infinite statistic raises `NonFiniteLossError` naming `name`. DI-engine's
    form `trainer(policy, log_freq=...)` is accepted too (the config is not needed). `log_freq`:
    log the statistics at INFO level each time `train_iter` crosses a multiple of it (None:
    never; the run's logger records them anyway)."""
    if policy is None:  # trainer(policy, log_freq=...)
        cfg, policy = None, cfg
    if not callable(getattr(policy, "forward", None)):
        raise TypeError(f"{name}: the policy must be a learn face with forward(batch), got a "
                        f"{type(policy).__name__}; call {name}(cfg, policy.learn_mode) or "
                        f"{name}(policy.learn_mode, log_freq=...)")
    if log_freq is not None and (isinstance(log_freq, bool) or not isinstance(log_freq, int)
                                 or log_freq < 1):
        raise ValueError(f"{name}(log_freq={log_freq!r}): must be an int >= 1 (log every that "
                         f"many train iterations) or None")

    @contract(reads=("train_data", "train_iter"), writes=("train_output", "train_iter"),
              role=Role.LEARNER)
    def _trainer(ctx: OnlineRLContext) -> None:
        if ctx.train_data is None:
            return
        output = policy.forward(ctx.train_data)
        check_finite(output, name, ctx.train_iter)
        ctx.train_output = output
        before = ctx.train_iter
        ctx.train_iter += int(output.get("n_updates", 1))
        if log_freq is not None and ctx.train_iter // log_freq > before // log_freq:
            stats = ", ".join(f"{k} {v:.4g}" for k, v in output.items()
                              if isinstance(v, (int, float, np.floating)) and k != "n_updates")
            log.info("%s: train_iter %d: %s", name, ctx.train_iter, stats)

    return _trainer


@contract(reads=("train_iter",), writes=("train_iter", "train_output", "train_data"),
          role=Role.LEARNER)
class OffPolicyLearner:
    """Up to `cfg.policy.learn.update_per_collect` updates per iteration from `buffer_`: each
    one the fetcher (a batch into `ctx.train_data`; priorities written back after the update)
    then the one `trainer`; `ctx.train_output` is the mean of their scalar statistics.

    How many updates run is the buffer's `UpdateSchedule` (`buffer_.controller`; the learner fills
    its `per_iteration` and `batch_size` from the config when they are None): none during warm-up
    (`min_samples`) or before a full batch, never more per inserted step than its ratio. A buffer
    without one gets a schedule of `update_per_collect` and `batch_size` alone. `last_decision`
    holds this iteration's `(n_updates, reason)`; the start and end of the warm-up are logged.
    `fetcher` (default `offpolicy_data_fetcher(cfg, buffer_)`) is any generator middleware that
    fills `ctx.train_data` before its `yield`. The learner reads no collector field, so in async
    mode it trains while collection runs.

    DI-engine's forms: `log_freq=N` logs the statistics every N train iterations (`trainer`);
    `reward_model` (positional after the buffer, as DI-engine's) is an object whose
    `estimate(batch)` returns the batch with the model's rewards, called on each fetched batch
    before the update; `buffer_` may be a list of `(buffer, fraction)` pairs: each batch takes
    `int(batch_size * fraction)` rows from each buffer, concatenated (see `buffer_shares`).
    """

    def __init__(self, cfg: Any, policy: Any, buffer_: Any, reward_model: Any = None,
                 log_freq: Optional[int] = None, *, fetcher: Optional[Callable] = None) -> None:
        self.policy = policy
        self.buffer = buffer_
        self._shares = buffer_shares(cfg, buffer_) if isinstance(buffer_, (list, dict)) else None
        schedule = getattr(buffer_, "controller", None)
        self.schedule = UpdateSchedule() if schedule is None else schedule
        self.schedule.complete(int(setting(cfg, "policy.learn.update_per_collect")),
                               int(setting(cfg, "policy.learn.batch_size")), where="OffPolicyLearner")
        owner = getattr(policy, "policy", policy)  # the policy behind a learn face
        if fetcher is None and getattr(owner, "recurrent", False) is True \
                and self._shares is None and not hasattr(buffer_, "seq_len"):
            name = type(owner).__name__
            raise TypeError(f"OffPolicyLearner: {name} learns on sequences, but a "
                            f"{type(buffer_).__name__} samples single transitions; use "
                            f"StepSequenceBuffer(capacity, seq_len, burn_in) with data_pusher(cfg, "
                            f"buffer_, group_by_env=True), or SequenceReplayBuffer with "
                            f"SequenceAdding and sequence_fetcher")
        if fetcher is None:
            fetcher = (offpolicy_data_fetcher(cfg, buffer_) if self._shares is None
                       else multi_buffer_fetcher(self._shares))
        self._fetch = fetcher
        if reward_model is not None and not callable(getattr(reward_model, "estimate", None)):
            raise TypeError(f"OffPolicyLearner(reward_model=...): a {type(reward_model).__name__} "
                            f"has no estimate(batch) -> batch (the batch with its 'reward' "
                            f"column replaced by the model's rewards)")
        self.reward_model = reward_model
        self._train = trainer(cfg, policy, log_freq, name="OffPolicyLearner")
        self.last_decision: Tuple[int, str] = (0, "not called yet")
        self._logged_wait = self._logged_start = False

    def _rows(self) -> int:
        """Rows the schedule sees: the buffer's, or for a list a full batch when every buffer
        holds its share (0 otherwise), since each batch takes a fixed share from each."""
        if self._shares is None:
            return len(self.buffer)
        full = all(len(buffer_) >= rows for buffer_, rows in self._shares)
        return sum(rows for _, rows in self._shares) if full else 0

    def __call__(self, ctx: OnlineRLContext) -> None:
        n_updates, reason = self.last_decision = self.schedule.allowed(self._rows())
        if not self._logged_start:
            self._log_start(n_updates, reason)
        outputs = []
        for _ in range(n_updates):
            fetch = self._fetch(ctx)
            post = fetch if hasattr(fetch, "__next__") else None
            try:
                if post is not None:
                    next(post)
                if ctx.train_data is None:
                    break
                if self.reward_model is not None:
                    ctx.train_data = self.reward_model.estimate(ctx.train_data)
                self._train(ctx)
                if post is not None:
                    next(post, None)
            finally:
                if post is not None:
                    post.close()
            outputs.append(ctx.train_output)
        if outputs:
            ctx.train_output = mean_stats(outputs)

    def _log_start(self, n_updates: int, reason: str) -> None:
        """Log why the first iterations wait (once) and when training starts (once)."""
        if n_updates:
            self._logged_start = True
            log.info("OffPolicyLearner: training starts: %s", reason)
        elif not self._logged_wait:
            self._logged_wait = True
            log.info("OffPolicyLearner: waiting: %s", reason)
