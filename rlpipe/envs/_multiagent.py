"""MultiAgentEnvManager: n copies of a PettingZoo parallel env, agents on an axis of the data.

Each copy runs inside a `ParallelAdapter` (see `_parallel`), so the single-agent `EnvManager`
does the vector work: sync loop or async subprocesses, seeding (env i reset with seed + i),
SAME_STEP autoreset with the true final observation, crash recovery and the restart budget.
This module unpacks its steps into per-agent arrays [n_envs, A, ...] with masks.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any, Literal

import gymnasium as gym
import numpy as np

from rlpipe.envs._agent_spaces import AgentLayout, agent_layout
from rlpipe.envs._manager import EnvManager
from rlpipe.envs._parallel import AdapterFactory, resolve_parallel

__all__ = ["MultiAgentEnvManager", "MultiAgentStepResult"]


@dataclass(slots=True)
class MultiAgentStepResult:
    """One step of every env; arrays are [n_envs, A, ...] (per agent) or [n_envs] (per env).

    - ``obs``: the observations to act from next (after the autoreset of envs whose episode
      ended); ``next_obs``: the true next observations of this step (an agent's final
      observation where it left, the episode's last ones where it ended). Rows of agents that
      are not in the episode hold stale values or zeros: read the masks.
    - ``reward`` float32, ``terminated``/``truncated`` bool: per agent, 0/False for agents that
      did not act.
    - ``agent_mask``: the agents that acted in this step — the rows that are real transitions
      (False everywhere in a row that is not ``valid``); ``next_agent_mask``: the agents still
      in the episode after it (they act next; all False where the episode ended).
    - ``global_state`` / ``next_global_state`` [n, S]: the env's global state before and after
      the step (None when the env has none).
    - ``valid`` [n]: False where the env was restarted after a crash (its row is no step).
    - ``episodes``: for each episode that ended, ``{"env_id", "return" (team return: summed over
      agents), "length", "agent_returns": {agent: return}}``.
    - ``action_mask`` / ``next_action_mask`` bool [n, A, n_actions]: valid actions in ``obs`` /
      ``next_obs`` (None when the env gives no masks). In ``action_mask`` the rows of agents
      not in the episode allow every action (whatever is drawn there is sent nowhere).
    """

    obs: np.ndarray
    next_obs: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    agent_mask: np.ndarray
    next_agent_mask: np.ndarray
    valid: np.ndarray
    global_state: np.ndarray | None = None
    next_global_state: np.ndarray | None = None
    episodes: list[dict[str, Any]] = field(default_factory=list)
    action_mask: np.ndarray | None = None
    next_action_mask: np.ndarray | None = None


class MultiAgentEnvManager:
    """``n_envs`` copies of a PettingZoo parallel env, stepped together, agents on an axis.

    Args:
        env: a factory returning a ``ParallelEnv`` (or an AEC env, converted with
            ``pettingzoo.utils.conversions.aec_to_parallel``), a ``"module:factory"`` string, or
            a module path such as ``"mpe2/simple_spread_v3"`` (its ``parallel_env``).
        n_envs, seed, step_timeout, max_restarts, restart_window: as for `EnvManager` (env i is
            reset with ``seed + i`` on the first reset; a crashing env is rebuilt and its row is
            not ``valid``).
        mode: ``"sync"`` (a loop in this process) or ``"async"`` (one subprocess per env).
        env_kwargs: keyword arguments for the factory.
        action_masks: False ignores the env's action masks (``obs["action_mask"]`` or
            ``info["action_mask"]`` per agent, PettingZoo's convention).

    Attributes: ``agents`` (``possible_agents``, in that order: the agent axis), ``n_agents``,
    ``observation_space`` and ``action_space`` (one agent's), ``batch_action_space``
    ([n_envs, A, ...], seeded), ``state_space`` (None without a global state). After
    :meth:`reset` and each :meth:`step`: ``agent_mask`` [n, A] (the agents that act next),
    ``global_state`` [n, S] or None, ``action_mask`` [n, A, n_actions] or None.
    """

    def __init__(self, env: Any, n_envs: int = 1, seed: int | None = None,
                 mode: Literal["sync", "async"] = "sync",
                 env_kwargs: dict[str, Any] | None = None, step_timeout: float | None = None,
                 max_restarts: int = 100, restart_window: int | None = None,
                 action_masks: bool = True) -> None:
        if mode not in ("sync", "async"):
            raise ValueError(f"MultiAgentEnvManager: mode must be 'sync' or 'async', got {mode!r}")
        source = resolve_parallel(env, env_kwargs)
        self.layout: AgentLayout = _probe(source, bool(action_masks))
        self._inner = EnvManager(AdapterFactory(source, self.layout), n_envs, seed, mode,
                                 step_timeout=step_timeout, max_restarts=max_restarts,
                                 restart_window=restart_window, action_masks=False)
        layout = self.layout
        self.env_label = source.label
        self.mode = mode
        self.n_envs = int(n_envs)
        self.seed = seed
        self.agents: list[str] = list(layout.agents)
        self.n_agents = len(self.agents)
        self.observation_space: gym.spaces.Box = layout.observation_space
        self.action_space: gym.Space = layout.action_space
        self.state_space: gym.spaces.Box | None = layout.state_space
        if seed is not None:
            self.action_space.seed(seed)
        self.agent_mask: np.ndarray | None = None
        self.global_state: np.ndarray | None = None
        self.action_mask: np.ndarray | None = None
        self._agent_return = np.zeros((self.n_envs, self.n_agents), dtype=np.float64)
        self._absent = np.broadcast_to(layout.absent_action,
                                       (self.n_envs, *layout.absent_action.shape))

    @property
    def batch_action_space(self) -> gym.Space:
        """[n_envs, A, ...]: ``sample()`` gives one action per agent of every env."""
        return self._inner.batch_action_space

    @property
    def restarts(self) -> int:
        return self._inner.restarts

    @property
    def closed(self) -> bool:
        return self._inner.closed

    def absent_filled(self, actions: Any, mask: np.ndarray | None = None) -> np.ndarray:
        """`actions` [n, A, ...] with the rows of agents not in ``mask`` (default: those not
        in the episode) replaced by a valid placeholder — they are never sent to an env."""
        mask = self.agent_mask if mask is None else mask
        actions = np.asarray(actions)
        if mask is None or mask.all():
            return actions
        shape = (self.n_envs, self.n_agents) + (1,) * (actions.ndim - 2)
        return np.where(mask.reshape(shape), actions, self._absent).astype(actions.dtype,
                                                                            copy=False)

    def reset(self, seed: int | None = None) -> np.ndarray:
        """Reset every env; the observations [n_envs, A, ...] (zeros for absent agents)."""
        packed = self._inner.reset(seed)
        self._agent_return[:] = 0.0
        self._unpack_current(packed)
        return packed["obs"]

    def step(self, actions: Any) -> MultiAgentStepResult:
        """Step every env with ``actions`` [n_envs, A, ...]; see `MultiAgentStepResult`."""
        if self.agent_mask is None:
            raise RuntimeError("MultiAgentEnvManager.step() called before reset(); call "
                               "reset() first")
        actions = np.asarray(actions)
        if actions.shape[:2] != (self.n_envs, self.n_agents):
            raise ValueError(
                f"MultiAgentEnvManager.step: expected actions of shape [n_envs={self.n_envs}, "
                f"n_agents={self.n_agents}, ...] (agents in the order {self.agents}); got "
                f"{actions.shape}")
        acted, state, mask = self.agent_mask, self.global_state, self.action_mask
        result = self._inner.step(self.absent_filled(actions, acted))
        obs, nxt, valid = result.obs, result.next_obs, result.valid
        reward = nxt["reward"]
        ret = self._agent_return
        ret += reward
        if not valid.all():
            acted = acted & valid[:, None]
            ret[~valid] = 0.0
        episodes = result.episodes
        for episode in episodes:
            i = episode["env_id"]
            episode["agent_returns"] = dict(zip(self.agents, ret[i].tolist()))
            ret[i] = 0.0
        self._unpack_current(obs)
        next_mask = nxt.get("action_mask")
        return MultiAgentStepResult(
            obs["obs"], nxt["obs"], reward, nxt["terminated"].astype(np.bool_),
            nxt["truncated"].astype(np.bool_), acted, nxt["mask"].astype(np.bool_), valid,
            state, nxt.get("state"), episodes, mask,
            None if next_mask is None else next_mask.astype(np.bool_))

    def _unpack_current(self, packed: dict[str, np.ndarray]) -> None:
        self.agent_mask = packed["mask"].astype(np.bool_)
        self.global_state = packed.get("state")
        mask = packed.get("action_mask")
        self.action_mask = None if mask is None else mask.astype(np.bool_)  # a copy
        if mask is not None:
            self.action_mask[~self.agent_mask] = True  # absent agents: sampled, never sent
            empty = ~self.action_mask.any(axis=2)
            if empty.any():
                env, agent = (int(x[0]) for x in np.nonzero(empty))
                raise ValueError(f"env {self.env_label}: agent {self.agents[agent]!r} of sub-env "
                                 f"{env} has an action mask with no valid action; the env must "
                                 f"allow at least one action to every agent in the episode")

    _STATE = ("agent_mask", "global_state", "action_mask", "_agent_return")

    def get_state(self) -> bytes:
        """The envs and the manager's bookkeeping as pickle bytes (sync mode only: envs in
        async subprocesses cannot be captured, as for `EnvManager`)."""
        mine = {name: getattr(self, name) for name in self._STATE}
        mine["action_space"] = self.action_space
        return pickle.dumps({"inner": self._inner.get_state(), "manager": mine})

    def set_state(self, state: bytes) -> None:
        """Restore `get_state()`'s bytes into a manager built the same way."""
        loaded = pickle.loads(state)  # noqa: S301 - a state this process family wrote
        self._inner.set_state(loaded["inner"])
        mine = loaded["manager"]
        self.action_space = mine.pop("action_space")
        for name, value in mine.items():
            setattr(self, name, value)

    def close(self) -> None:
        """Close every env and worker process. Safe to call more than once."""
        self._inner.close()

    def __enter__(self) -> MultiAgentEnvManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"MultiAgentEnvManager({self.env_label}, n_envs={self.n_envs}, "
                f"agents={self.agents}, mode={self.mode!r})")


def _probe(source: Any, action_masks: bool) -> AgentLayout:
    """The agent layout, read from one env built (and reset once) in this process."""
    env = source.make()
    try:
        infos = None
        if action_masks:
            _, infos = env.reset()
        return agent_layout(env, source.label, action_masks, infos)
    finally:
        env.close()
