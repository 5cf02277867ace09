"""Transitions, replay buffers (uniform, prioritized), n-step, on-policy rollouts, GAE,
the sample-ratio controller and batching to torch."""
from ._controller import UNLIMITED, SampleRatioController
from ._prioritized import PrioritizedReplayBuffer
from ._replay import ReplayBuffer
from ._sumtree import SumTree

__all__ = [
    "PrioritizedReplayBuffer",
    "ReplayBuffer",
    "SampleRatioController",
    "SumTree",
    "UNLIMITED",
]
