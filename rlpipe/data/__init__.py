"""Transitions, replay buffers (uniform, prioritized), n-step, on-policy rollouts, GAE,
the update schedule (sample-ratio controller) and batching to torch."""
from ._batch import to_torch
from ._gae import compute_gae
from ._nstep import NStepAccumulator, nstep_targets
from ._per_env import PerEnvOutput, batch_of
from ._prioritized import PrioritizedReplayBuffer
from ._replay import ReplayBuffer
from ._rollout import RolloutStorage
from ._schedule import UNLIMITED, SampleRatioController, UpdateSchedule
from ._sumtree import SumTree
from ._transition import TRANSITION_KEYS, bootstrap_discount, td_targets

__all__ = [
    "NStepAccumulator",
    "PerEnvOutput",
    "PrioritizedReplayBuffer",
    "ReplayBuffer",
    "RolloutStorage",
    "SampleRatioController",
    "SumTree",
    "TRANSITION_KEYS",
    "UNLIMITED",
    "UpdateSchedule",
    "batch_of",
    "bootstrap_discount",
    "compute_gae",
    "nstep_targets",
    "td_targets",
    "to_torch",
]
