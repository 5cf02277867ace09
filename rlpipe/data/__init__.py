"""Transitions, replay buffers (uniform, prioritized), n-step, on-policy rollouts, GAE,
the sample-ratio controller and batching to torch."""
from ._controller import UNLIMITED, SampleRatioController
from ._gae import compute_gae
from ._prioritized import PrioritizedReplayBuffer
from ._replay import ReplayBuffer
from ._rollout import RolloutStorage
from ._sumtree import SumTree

__all__ = [
    "PrioritizedReplayBuffer",
    "ReplayBuffer",
    "RolloutStorage",
    "SampleRatioController",
    "SumTree",
    "UNLIMITED",
    "compute_gae",
]
