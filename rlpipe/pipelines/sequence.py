"""The data path of the off-policy pipeline for recurrent policies (R2D2): the collector's
steps are cut into sequences (`SequenceAdding`, collector side), pushed into a
`SequenceReplayBuffer` (`sequence_pusher`, learner side) and sampled by `sequence_fetcher`.

`replay.capacity` counts sequences here; `replay.prioritized`, `alpha` and `beta` are the
buffer's, `policy.learn.priority_eta` its priority mix; `seq_len`, `burn_in` and `stride` come
from `policy.learn`. The adder's open windows are saved with the collector's resume state."""
from __future__ import annotations

from typing import Any, Dict

from rlpipe.data import SequenceReplayBuffer, UpdateSchedule
from rlpipe.middleware import SequenceAdding, sequence_fetcher, sequence_pusher

from .base import DataPath

ADDER_KEY = "sequence_adder"


class CollectorWithAdder:
    """The collector's resume state plus the adder's open windows (an exact resume continues
    every env's window where it was)."""

    def __init__(self, collector: Any, adding: SequenceAdding) -> None:
        self.collector, self.adding = collector, adding

    def get_state(self) -> Dict[str, Any]:
        return {**self.collector.get_state(), ADDER_KEY: self.adding.state_dict()}

    def set_state(self, state: Dict[str, Any]) -> None:
        state = dict(state)
        self.adding.load_state_dict(state.pop(ADDER_KEY, None))
        self.collector.set_state(state)


def make_sequence_buffer(cfg: Any) -> SequenceReplayBuffer:
    learn, replay = cfg.policy.learn, cfg.replay
    return SequenceReplayBuffer(replay.capacity, learn.seq_len, learn.burn_in,
                                prioritized=replay.prioritized, alpha=replay.alpha,
                                beta=replay.beta, eta=learn.priority_eta, seed=cfg.seed,
                                controller=UpdateSchedule.from_config(cfg))


def sequence_data(cfg: Any, collector: Any) -> DataPath:
    buffer_ = make_sequence_buffer(cfg)
    adding = SequenceAdding(cfg)

    def install(task: Any) -> None:
        task.use(adding)
        task.use(sequence_pusher(cfg, buffer_))

    return DataPath(buffer_, CollectorWithAdder(collector, adding), install,
                    sequence_fetcher(cfg, buffer_))
