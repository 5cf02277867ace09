"""The agent axis of a PettingZoo parallel env: one layout for all its agents.

`agent_layout(env, label, action_masks)` reads the agents (``possible_agents``, in their
order), their spaces and the global state space of one env and checks that the agents can
share one array per step: every agent's observation and action must have the same shape (an
observation Box may differ in bounds: the layout takes their union). It also plans the packed
observation with which one parallel step travels through the single-agent vector machinery
(see `_parallel.ParallelAdapter`): a gymnasium Dict of

- ``obs`` [A, ...] — each agent's observation (zeros for an agent that gave none),
- ``mask`` [A] — agents in the episode after this step (they act next),
- ``reward`` [A], ``terminated`` [A], ``truncated`` [A] — this step's, per agent,
- ``state`` [S] — the global state, where the env has one,
- ``action_mask`` [A, n_actions] — where the env gives masks (Discrete actions only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["AgentLayout", "agent_layout"]

OBS_KEY = "observation"  # PettingZoo's key of the observation beside "action_mask"
MASK_KEY = "action_mask"


@dataclass(frozen=True)
class AgentLayout:
    """What the manager and its sub-envs agree on about the agents (picklable)."""

    agents: tuple[str, ...]
    observation_space: spaces.Box  # one agent's
    action_space: spaces.Space  # one agent's
    stacked_action_space: spaces.Space  # [A, ...]: the actions of one env
    state_space: spaces.Box | None
    obs_in_dict: bool  # the agents' observations are Dicts {"observation", "action_mask"}
    mask_source: str | None  # "obs", "info" or None: where action masks come from
    n_actions: int | None  # per agent, for masks (Discrete action spaces)
    absent_action: np.ndarray  # [A, ...] a valid action per agent, sent nowhere (absent agents)
    packed_space: spaces.Dict


def agent_layout(env: Any, label: str, action_masks: bool = True,
                 reset_infos: dict | None = None) -> AgentLayout:
    """The layout of `env` (a parallel env). `reset_infos`: its infos after a reset, read for
    ``info["action_mask"]`` when the observations carry no mask."""
    agents = tuple(env.possible_agents)
    if not agents:
        raise ValueError(f"multi-agent env {label} has no possible_agents; a PettingZoo env "
                         f"lists every agent it may have in env.possible_agents")
    obs_spaces = [env.observation_space(a) for a in agents]
    obs_in_dict = isinstance(obs_spaces[0], spaces.Dict) and OBS_KEY in obs_spaces[0].spaces
    if obs_in_dict:
        mask_in_obs = all(MASK_KEY in s.spaces for s in obs_spaces)
        obs_spaces = [s.spaces.get(OBS_KEY) for s in obs_spaces]
    else:
        mask_in_obs = False
    obs_space = _common_box(obs_spaces, agents, label)
    act_spaces = [env.action_space(a) for a in agents]
    action_space, stacked, absent = _common_action(act_spaces, agents, label)
    n_actions = int(action_space.n) if isinstance(action_space, spaces.Discrete) else None
    mask_source = None
    if action_masks and n_actions is not None:
        if mask_in_obs:
            mask_source = "obs"
        elif reset_infos and any(MASK_KEY in (reset_infos.get(a) or {}) for a in agents):
            mask_source = "info"
    state_space = _state_space(env, label)
    n = len(agents)
    packed = {
        "obs": spaces.Box(np.stack([obs_space.low] * n), np.stack([obs_space.high] * n),
                          dtype=obs_space.dtype),
        "mask": spaces.MultiBinary(n),
        "reward": spaces.Box(-np.inf, np.inf, (n,), np.float32),
        "terminated": spaces.MultiBinary(n),
        "truncated": spaces.MultiBinary(n),
    }
    if state_space is not None:
        packed["state"] = state_space
    if mask_source is not None:
        packed["action_mask"] = spaces.MultiBinary([n, n_actions])
    return AgentLayout(agents, obs_space, action_space, stacked, state_space, obs_in_dict,
                       mask_source, n_actions, absent, spaces.Dict(packed))


def _refuse(label: str, what: str, agents: tuple[str, ...], found: list[Any]) -> ValueError:
    pairs = ", ".join(f"{a}: {s}" for a, s in zip(agents, found))
    return ValueError(f"multi-agent env {label}: the agents' {what} differ ({pairs}); rlpipe "
                      f"stacks agents on one axis, so their {what} must have one shape. Wrap the "
                      f"env to pad them to one shape (e.g. supersuit's pad_observations_v0)")


def _common_box(found: list[Any], agents: tuple[str, ...], label: str) -> spaces.Box:
    if not all(isinstance(s, spaces.Box) for s in found):
        raise TypeError(f"multi-agent env {label}: agent observations must be Box spaces (or "
                        f"Dicts of 'observation' Box and 'action_mask'), got "
                        f"{[type(s).__name__ for s in found]}; flatten them in a wrapper")
    if len({(s.shape, s.dtype) for s in found}) > 1:
        raise _refuse(label, "observation spaces", agents, found)
    first = found[0]
    low = np.minimum.reduce([s.low for s in found])
    high = np.maximum.reduce([s.high for s in found])
    return spaces.Box(low, high, dtype=first.dtype)


def _common_action(found: list[Any], agents: tuple[str, ...],
                   label: str) -> tuple[spaces.Space, spaces.Space, np.ndarray]:
    first, n = found[0], len(found)
    if isinstance(first, spaces.Discrete):
        if any(not isinstance(s, spaces.Discrete) or (s.n, s.start) != (first.n, first.start)
               for s in found):
            raise _refuse(label, "action spaces", agents, found)
        space = spaces.Discrete(int(first.n), start=int(first.start))
        stacked = spaces.MultiDiscrete(np.full(n, first.n), start=np.full(n, first.start))
        return space, stacked, np.full(n, first.start, dtype=stacked.dtype)
    if isinstance(first, spaces.Box):
        if any(not isinstance(s, spaces.Box) or (s.shape, s.dtype) != (first.shape, first.dtype)
               for s in found):
            raise _refuse(label, "action spaces", agents, found)
        low, high = np.stack([s.low for s in found]), np.stack([s.high for s in found])
        stacked = spaces.Box(low, high, dtype=first.dtype)
        space = spaces.Box(low.min(axis=0), high.max(axis=0), dtype=first.dtype)
        absent = np.clip(np.zeros_like(low), low, high).astype(first.dtype)
        return space, stacked, absent
    raise TypeError(f"multi-agent env {label}: agent action spaces must be Discrete or Box, got "
                    f"{type(first).__name__}")


def _state_space(env: Any, label: str) -> spaces.Box | None:
    space = getattr(env, "state_space", None)
    if space is None:
        return None
    if not isinstance(space, spaces.Box):
        raise TypeError(f"multi-agent env {label}: state_space must be a Box (the global state "
                        f"is one flat array), got {space}")
    return space
