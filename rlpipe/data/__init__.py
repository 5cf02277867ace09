"""Transitions, replay buffers (uniform, prioritized, frame stacks stored once, sequences with burn-in, cut
when pushed or when sampled), n-step,
on-policy rollouts (and their chunks for recurrent policies), GAE,
the update schedule (sample-ratio controller), batching to torch, and offline data sets
(`OfflineDataset`, Minari on disk: `load_dataset`, `write_dataset`)."""
from ._batch import to_torch
from ._frames import FrameReplayBuffer, PrioritizedFrameReplayBuffer
from ._gae import compute_gae
from ._minari_io import (dataset_spec, dataset_root, dataset_summary, load_dataset,
                         local_datasets, write_dataset)
from ._nstep import NStepAccumulator, nstep_targets
from ._offline import OfflineDataset
from ._offline_pack import OfflineDataError
from ._per_env import PerEnvOutput, batch_of
from ._prioritized import PrioritizedReplayBuffer
from ._replay import ReplayBuffer
from ._rollout import RolloutStorage
from ._schedule import UNLIMITED, SampleRatioController, UpdateSchedule
from ._sequence_replay import SequenceReplayBuffer
from ._sequences import SequenceAdder
from ._step_sequences import StepSequenceBuffer
from ._sumtree import SumTree
from ._transition import TRANSITION_KEYS, bootstrap_discount, td_targets

__all__ = [
    "FrameReplayBuffer",
    "NStepAccumulator",
    "OfflineDataError",
    "OfflineDataset",
    "PerEnvOutput",
    "PrioritizedFrameReplayBuffer",
    "PrioritizedReplayBuffer",
    "ReplayBuffer",
    "RolloutStorage",
    "SampleRatioController",
    "SequenceAdder",
    "SequenceReplayBuffer",
    "StepSequenceBuffer",
    "SumTree",
    "TRANSITION_KEYS",
    "UNLIMITED",
    "UpdateSchedule",
    "batch_of",
    "bootstrap_discount",
    "compute_gae",
    "dataset_spec",
    "dataset_root",
    "dataset_summary",
    "load_dataset",
    "local_datasets",
    "nstep_targets",
    "td_targets",
    "to_torch",
    "write_dataset",
]
