"""MiniGrid and BabyAI ids as rlpipe env names: the Dict observation less its text `mission`.

Every ``MiniGrid-*`` and ``BabyAI-*`` gymnasium id (``pip install "rlpipe[minigrid]"``) resolves
to :func:`make_minigrid`: ``gym.make(id)`` after importing minigrid (which registers its ids),
observing every part of the Dict but the mission text (a ``MissionSpace``, which rlpipe's env
manager does not batch and the encoders would leave out). `image` (7×7×3 object, colour and
state ids, uint8) is declared with its true bounds, so that encoders scale each channel to
[0, 1]; `direction` stays Discrete(4). Actions reach MiniGrid as Python ints (`IntActions`).
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Sequence

import gymnasium as gym
import numpy as np

__all__ = ["IntActions", "KeepKeys", "MINIGRID_PREFIXES", "is_minigrid_id", "make_minigrid"]

MINIGRID_PREFIXES = ("MiniGrid-", "BabyAI-")
INSTALL = "pip install 'rlpipe[minigrid]'"


def is_minigrid_id(name: str) -> bool:
    """Whether `name` is a MiniGrid or BabyAI gymnasium id (by its prefix)."""
    return name.startswith(MINIGRID_PREFIXES)


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


class IntActions(gym.ActionWrapper, gym.utils.RecordConstructorArgs):
    """Hand the env a NumPy integer action (what vector envs and batched policies give) as a
    Python int; other actions pass unchanged.

    MiniGrid's step compares the action with members of an IntEnum, one `==` per action kind
    until one matches: `np.int64(a) == member` costs about 10 µs (NumPy probes the member for
    array interfaces), `a == member` for an int about 0.2 µs, which makes a DoorKey-5x5 step
    about a tenth cheaper. MiniGrid only compares the action, so it steps the same.
    """

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ActionWrapper.__init__(self, env)

    def action(self, action: Any) -> Any:
        return int(action) if isinstance(action, np.integer) else action


def make_minigrid(env_id: str, **kwargs: Any) -> gym.Env:
    """`gym.make(env_id, **kwargs)` after importing minigrid, without the mission text and with
    the image's true bounds (MiniGrid declares 0–255; the ids go up to the largest object,
    colour and state ids), taking its actions as Python ints (`IntActions`)."""
    import minigrid  # noqa: F401  (registers the MiniGrid-* and BabyAI-* ids)
    from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX, STATE_TO_IDX
    from minigrid.core.mission import MissionSpace

    env = gym.make(env_id, **kwargs)
    space = env.observation_space
    if not isinstance(space, gym.spaces.Dict):
        return IntActions(env)  # no Dict: no mission part to drop
    text = (MissionSpace, gym.spaces.Text)
    keys = [k for k, s in space.spaces.items() if not isinstance(s, text)]
    spaces = {}
    image = space.spaces.get("image")
    if isinstance(image, gym.spaces.Box) and image.shape[-1:] == (3,):
        high = np.broadcast_to(np.array([max(OBJECT_TO_IDX.values()), max(COLOR_TO_IDX.values()),
                                         max(STATE_TO_IDX.values())], np.uint8), image.shape)
        spaces["image"] = gym.spaces.Box(0, high, image.shape, np.uint8)
    return IntActions(KeepKeys(env, keys, spaces))
