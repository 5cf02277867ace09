"""MiniGrid envs as rlpipe env names: the full Dict observation less the text `mission`.

Importing this module registers (with `rlpipe.envs.register_env`) the MiniGrid ids that the
entries use, under their gymnasium ids; `minigrid` itself is imported only when an env is made
(importing it registers its gymnasium ids). The observation keeps `image` (7×7×3 object ids,
uint8, declared with their true bounds) and `direction` (Discrete(4)); `mission` is text that
rlpipe's env manager does not batch (and the encoders would leave out).
"""
from __future__ import annotations

import functools
from typing import Any, Dict, Mapping, Sequence

import gymnasium as gym
import numpy as np

from rlpipe.envs import register_env

IDS = ("MiniGrid-DoorKey-5x5-v0", "MiniGrid-DoorKey-6x6-v0", "MiniGrid-DoorKey-8x8-v0",
       "MiniGrid-Empty-5x5-v0", "MiniGrid-Empty-6x6-v0", "MiniGrid-Empty-8x8-v0",
       "MiniGrid-Empty-Random-5x5-v0", "MiniGrid-Unlock-v0", "MiniGrid-KeyCorridorS3R1-v0",
       "MiniGrid-MemoryS7-v0")
KEYS = ("image", "direction")


class KeepKeys(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Keep only `keys` of a Dict observation (picklable, unlike gymnasium's FilterObservation,
    which holds a lambda; rlpipe pickles env state into checkpoints for resume). `spaces`
    replaces the declared space of a kept key (same shape and dtype, tighter bounds). The
    arguments are recorded in ``env.spec``, so that ``env.spec.make()`` rebuilds it."""

    def __init__(self, env: gym.Env, keys: Sequence[str],
                 spaces: Mapping[str, gym.Space] | None = None) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, keys=keys, spaces=spaces)
        gym.ObservationWrapper.__init__(self, env)
        missing = [k for k in keys if k not in env.observation_space.spaces]
        if missing:
            raise KeyError(f"{env.spec.id if env.spec else env}: observation has no key(s) "
                           f"{missing}; it has {sorted(env.observation_space.spaces)}")
        self.keys = tuple(keys)
        spaces = dict(spaces or {})
        self.observation_space = gym.spaces.Dict(
            {k: spaces.get(k, env.observation_space.spaces[k]) for k in self.keys})

    def observation(self, observation: Dict[str, Any]) -> Dict[str, Any]:
        return {k: observation[k] for k in self.keys}


def make_minigrid(env_id: str, **kwargs: Any) -> gym.Env:
    """`gym.make(env_id)` after importing minigrid, observing only `image` and `direction`; the
    image's declared bounds are the largest object, colour and state ids (MiniGrid declares
    0–255), so encoders scale each channel to [0, 1]."""
    import minigrid  # noqa: F401  (registers the MiniGrid-* ids)
    from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX, STATE_TO_IDX

    env = gym.make(env_id, **kwargs)
    image = env.observation_space["image"]
    high = np.broadcast_to(np.array([max(OBJECT_TO_IDX.values()), max(COLOR_TO_IDX.values()),
                                     max(STATE_TO_IDX.values())], np.uint8), image.shape)
    return KeepKeys(env, KEYS, {"image": gym.spaces.Box(0, high, image.shape, np.uint8)})


for _id in IDS:
    register_env(_id, functools.partial(make_minigrid, _id), overwrite=True)
