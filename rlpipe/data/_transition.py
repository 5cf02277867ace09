"""What a transition holds and how it bootstraps (the ALF table, in gymnasium's terms).

| the step ends because     | terminated | truncated | discount | bootstrap from            |
|---------------------------|------------|-----------|----------|---------------------------|
| nothing: the episode goes on | False   | False     | gamma    | next_obs                  |
| the task ended (goal, fall) | True     | False     | 0        | nothing                   |
| the time limit            | False      | True      | gamma    | next_obs = true final obs |

`truncated` never changes the target; it only marks where an episode (and so a GAE or n-step
window) was cut. A transition whose episode terminated *and* hit the limit at once counts
as terminated.
"""
from __future__ import annotations

from typing import Any

import numpy as np

TRANSITION_KEYS = ("obs", "action", "reward", "next_obs", "terminated", "truncated")
"""The keys every transition batch carries; policies may add extras (logp, value, ...)."""


def bootstrap_discount(terminated: Any, gamma: float) -> np.ndarray:
    """gamma where the value of next_obs is used, 0 where the episode terminated (float32)."""
    return (gamma * (1.0 - np.asarray(terminated, dtype=np.float64))).astype(np.float32)


def td_targets(reward: Any, next_value: Any, terminated: Any, gamma: float) -> np.ndarray:
    """One-step targets r + gamma * (1 - terminated) * V(next_obs) (float32).

    `next_value` is the value of next_obs, which for a truncated step is the true final
    observation, so a time-limit end bootstraps and a real end does not.
    """
    r = np.asarray(reward, dtype=np.float64)
    return (r + bootstrap_discount(terminated, gamma) * np.asarray(next_value, dtype=np.float64)
            ).astype(np.float32)
