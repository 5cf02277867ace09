"""SISL multiwalker_v9 as the multiwalker entries run it: walkers that fall leave early.

With ``terminate_on_fall=False, remove_on_fall=True`` a walker that falls is done (it gets
``fall_reward + terminate_reward``) and is removed from ``env.agents`` while the others go on
until the package falls, reaches the end, or ``max_cycles`` pass. PettingZoo's env then has two
faults that `multiwalker_env` mends (and nothing else):

- ``state()`` raises AttributeError once a walker is removed (it asks every walker's hull for
  its position). `LeavingWalkers.state` builds the same global state from the walkers'
  last observations, with zeros for a removed walker.
- the end at ``max_cycles`` is reported as ``terminated`` for every walker; it is a time limit,
  so here it is ``truncated`` (the learner bootstraps from V there, as for any time limit).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from pettingzoo.utils.wrappers import BaseParallelWrapper

__all__ = ["LeavingWalkers", "multiwalker_env"]

_OWN_OBS = 24  # a walker's own part of its 31-d observation (hull, joints, legs, lidar)


def multiwalker_env(**kwargs: Any) -> LeavingWalkers:
    """``pettingzoo.sisl.multiwalker_v9.parallel_env(**kwargs)`` with the mends above."""
    from pettingzoo.sisl import multiwalker_v9

    return LeavingWalkers(multiwalker_v9.parallel_env(**kwargs))


class LeavingWalkers(BaseParallelWrapper):
    """A multiwalker parallel env whose ``state()`` survives removed walkers and whose time
    limit is a truncation (module docstring); everything else is the wrapped env's (PettingZoo's
    parallel wrapper hands on ``agents``, spaces, ``reset``, ``unwrapped`` ...)."""

    @property
    def sim(self) -> Any:
        """multiwalker_base.MultiWalkerEnv, the Box2D simulation (read through the wrapped
        env, so that pickling this object pickles only what the wrapped env pickles)."""
        return self.env.unwrapped.env

    def step(self, actions: dict) -> tuple:
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        sim = self.sim
        if sim.frames >= sim.max_cycles:  # time ran out: walkers still standing are truncated
            index = {a: k for k, a in enumerate(self.possible_agents)}
            for agent, done in list(terminated.items()):
                if done and not sim.last_dones[index[agent]]:
                    terminated[agent], truncated[agent] = False, True
        return obs, rewards, terminated, truncated, infos

    def state(self) -> np.ndarray:
        """Each walker's own observation (zeros once it is removed) and the package's x, y and
        angle: PettingZoo's ``state()`` layout, read from the observations of the last step."""
        sim = self.sim
        parts = [np.asarray(o, dtype=np.float32)[:_OWN_OBS] if w.hull is not None
                 else np.zeros(_OWN_OBS, np.float32) for o, w in zip(sim.last_obs, sim.walkers)]
        package = sim.package
        parts.append(np.array([package.position.x, package.position.y, package.angle],
                              dtype=np.float32))
        return np.concatenate(parts)
