"""The offline data fetcher: a batch of a fixed data set into `ctx.train_data` each iteration.

With `trainer(cfg, policy.learn_mode)` after it on an `OfflineRLContext` this is the offline
pipeline of DI-engine's middleware guide, with the same names and arguments:

    task.use(offline_data_fetcher(cfg, dataset))
    task.use(trainer(cfg, policy.learn_mode))
"""
from __future__ import annotations

from typing import Any, Callable

from rlpipe.contexts import OfflineRLContext
from rlpipe.engine import Role, contract

from ._cfg import setting

__all__ = ["offline_data_fetcher"]


def offline_data_fetcher(cfg: Any, dataset: Any) -> Callable:
    """Each call: `ctx.train_data = dataset.sample(cfg.policy.learn.batch_size)` (shuffled
    batches, without replacement within an epoch) and `ctx.train_epoch = dataset.epoch` (passes
    completed). `dataset`: an `rlpipe.data.OfflineDataset` (`load_dataset(ID)` for a Minari
    data set, or `OfflineDataset.from_episodes(...)`), or anything with `sample(n)` and `epoch`."""
    batch_size = setting(cfg, "policy.learn.batch_size")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError(f"offline_data_fetcher: policy.learn.batch_size must be a positive int, "
                         f"got {batch_size!r}")
    if not callable(getattr(dataset, "sample", None)) or not hasattr(dataset, "epoch"):
        raise TypeError(
            f"offline_data_fetcher: the data set is a {type(dataset).__name__}, which has no "
            f"sample(batch_size) and epoch; pass an rlpipe.data.OfflineDataset "
            f"(rlpipe.data.load_dataset('NAMESPACE/NAME-v0') or OfflineDataset.from_episodes)")
    if len(dataset) < batch_size:
        raise ValueError(f"offline_data_fetcher: data set {getattr(dataset, 'id', None)!r} holds "
                         f"{len(dataset)} transitions, fewer than policy.learn.batch_size "
                         f"{batch_size}; lower the batch size or collect more")

    @contract(writes=("train_data", "train_epoch"), role=Role.LEARNER)
    def _offline_data_fetcher(ctx: OfflineRLContext) -> None:
        ctx.train_data = dataset.sample(batch_size)
        ctx.train_epoch = dataset.epoch

    return _offline_data_fetcher
