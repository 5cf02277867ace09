"""Partially observed envs: a wrapper that hides observation components, and tasks that need
memory. Registered with gymnasium when `rlpipe.envs` is imported:

- ``"rlpipe/CartPoleNoVel-v1"``: CartPole-v1 seeing only the cart position x and the pole
  angle θ (the two velocities removed); 500 steps at most, as CartPole-v1.
- ``"rlpipe/PendulumNoVel-v1"``: Pendulum-v1 seeing only cos θ and sin θ (the angular velocity
  removed); 200 steps, as Pendulum-v1.
- ``"rlpipe/RememberFirst-v0"``: the first observation shows a cue, +1 or −1; every later one
  is 0. At the last step of the episode (``length`` steps, 4 by default) the reward is +1 if the
  action names the cue (action 1 for +1, action 0 for −1), else 0; other steps give 0. A
  feed-forward policy gets 0.5 on average, a policy that remembers the first observation 1.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control import CartPoleEnv, PendulumEnv

CARTPOLE_NOVEL = "rlpipe/CartPoleNoVel-v1"
PENDULUM_NOVEL = "rlpipe/PendulumNoVel-v1"
REMEMBER_FIRST = "rlpipe/RememberFirst-v0"

CARTPOLE_POSITIONS = (0, 2)  # x, θ of [x, ẋ, θ, θ̇]
PENDULUM_POSITIONS = (0, 1)  # cos θ, sin θ of [cos θ, sin θ, θ̇]


class MaskObservation(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Keep only the components `keep` (indices into a flat Box observation), in that order.

    ``MaskObservation(gym.make("CartPole-v1"), keep=[0, 2])`` hides CartPole's velocities (and
    ``env.spec.make()`` rebuilds the masked env: the arguments are recorded in its spec).
    """

    def __init__(self, env: gym.Env, keep: Sequence[int]) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, keep=keep)
        gym.ObservationWrapper.__init__(self, env)
        space = env.observation_space
        if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
            raise TypeError(f"MaskObservation keeps components of a flat Box observation; "
                            f"{env} has {space}. Flatten it first (gymnasium's "
                            f"FlattenObservation) or pick keys of a Dict observation instead")
        size = space.shape[0]
        keep = [int(i) for i in keep]
        bad = [i for i in keep if not -size <= i < size]
        if not keep or bad or len(set(i % size for i in keep)) != len(keep):
            raise ValueError(f"MaskObservation(keep={keep}): need distinct indices in "
                             f"[0, {size}) for the observation {space}; out of range: {bad}")
        self.keep = np.array(keep, dtype=np.int64)
        self.observation_space = gym.spaces.Box(space.low[self.keep], space.high[self.keep],
                                                dtype=space.dtype)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation[self.keep]


def cartpole_novel(**kwargs: Any) -> gym.Env:
    """CartPole without the cart and pole velocities (observation [x, θ])."""
    return MaskObservation(CartPoleEnv(**kwargs), keep=CARTPOLE_POSITIONS)


def pendulum_novel(**kwargs: Any) -> gym.Env:
    """Pendulum without the angular velocity (observation [cos θ, sin θ])."""
    return MaskObservation(PendulumEnv(**kwargs), keep=PENDULUM_POSITIONS)


class RememberFirstEnv(gym.Env):
    """See the module docstring: reward at the last step for naming the first step's cue."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, length: int = 4) -> None:
        if int(length) < 1:
            raise ValueError(f"RememberFirst: length must be >= 1 step, got {length}")
        self.length = int(length)
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.cue = 1.0
        self.t = 0

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.cue = float(self.np_random.choice((-1.0, 1.0)))
        self.t = 0
        return np.array([self.cue], dtype=np.float32), {"cue": self.cue}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        last = self.t >= self.length
        named = 1.0 if int(action) == 1 else -1.0
        reward = float(named == self.cue) if last else 0.0
        return np.zeros(1, dtype=np.float32), reward, last, False, {"cue": self.cue}


def register() -> None:
    """Register the three ids with gymnasium (once)."""
    for gym_id, entry, steps in ((CARTPOLE_NOVEL, "cartpole_novel", 500),
                                 (PENDULUM_NOVEL, "pendulum_novel", 200),
                                 (REMEMBER_FIRST, "RememberFirstEnv", None)):
        if gym_id not in gym.registry:
            gym.register(gym_id, entry_point=f"rlpipe.envs._pomdp:{entry}",
                         max_episode_steps=steps)
