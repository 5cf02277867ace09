"""Transitions, replay buffers (uniform, prioritized), n-step, on-policy rollouts, GAE,
the sample-ratio controller and batching to torch."""
from ._controller import UNLIMITED, SampleRatioController
from ._replay import ReplayBuffer

__all__ = [
    "ReplayBuffer",
    "SampleRatioController",
    "UNLIMITED",
]
