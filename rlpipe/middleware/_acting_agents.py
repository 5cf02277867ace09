"""The agent axis of the acting path: acting in a multi-agent env manager.

With a multi-agent manager (`rlpipe.envs.MultiAgentEnvManager`: it has `n_agents`) the collect
face is called ``forward(obs [n, A, ...], agent_mask=[n, A], global_state=[n, S] or None,
**collect_kwargs)`` (plus ``action_mask=`` [n, A, n_actions] where the env gives masks) and
returns ``{"action": [n, A, ...], ...}``. A step record carries ``obs``, ``action``, ``reward``,
``next_obs``, ``terminated``, ``truncated`` with the agent axis, and ``agent_mask`` (the
agents that acted: the real transition rows), ``next_agent_mask``, ``global_state``,
``next_global_state`` and ``valid`` [n]. `env_step` counts env rows, not agent steps; an
episode's ``return`` is the team return (summed over agents) and its ``agent_returns`` maps
each agent to its own. Warm-up actions are drawn per agent, for the agents in the episode only.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

import numpy as np

from rlpipe.envs import sample_valid_actions

from .exploration import kwargs_at
from ._acting import Acting, EnvCursor, check_mask_support, step_record


def is_multi_agent(env: Any) -> bool:
    """Whether `env` is a multi-agent env manager (it has an agent axis)."""
    return getattr(env, "n_agents", None) is not None


def mean_agent_returns(episodes: Iterable[Mapping[str, Any]]) -> Optional[Dict[str, float]]:
    """Each agent's mean return over the `episodes` that carry ``agent_returns`` (None: none)."""
    sums: Dict[str, float] = {}
    counts: Dict[str, int] = {}
    for episode in episodes:
        for agent, value in (episode.get("agent_returns") or {}).items():
            sums[agent] = sums.get(agent, 0.0) + float(value)
            counts[agent] = counts.get(agent, 0) + 1
    return {agent: sums[agent] / counts[agent] for agent in sums} if sums else None


class MultiAgentActing(Acting):
    """`Acting` in a multi-agent env manager (see the module docstring)."""

    def __init__(self, policy: Any, env: Any, cursor: Optional[EnvCursor] = None,
                 random_collect_size: int = 0) -> None:
        super().__init__(policy, env, cursor, random_collect_size)
        self.n_agents = int(env.n_agents)

    def _agents(self) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        agents = self.cursor.agents
        if agents is None:
            raise ValueError(f"{self.cursor!r} holds observations without agent masks (acted "
                             f"from before as a single-agent env?); give the multi-agent env "
                             f"manager a cursor of its own: EnvCursor(env)")
        return agents

    def act(self, env_step: int, collect_kwargs: Mapping[str, Any]) -> Tuple[Any, Dict[str, Any]]:
        obs = self.cursor.current()
        mask = self.cursor.mask
        agent_mask, global_state = self._agents()
        if env_step < self.random_collect_size:
            return obs, {"action": self.random_actions(mask)}
        collect_kwargs = kwargs_at(collect_kwargs, env_step)
        if mask is None:
            return obs, self.policy.forward(obs, agent_mask=agent_mask,
                                            global_state=global_state, **collect_kwargs)
        check_mask_support(self.policy, mask)
        return obs, self.policy.forward(obs, agent_mask=agent_mask, global_state=global_state,
                                        **collect_kwargs, action_mask=mask)

    def random_actions(self, mask: Optional[np.ndarray]) -> np.ndarray:
        """One uniform action per agent in the episode (among its valid ones where the env
        gives masks); the rows of the other agents hold a placeholder sent to no env."""
        env = self.env
        if mask is not None:
            space = env.action_space
            n, agents, k = mask.shape
            drawn = sample_valid_actions(space.np_random, mask.reshape(n * agents, k), [k])
            actions = (drawn.reshape(n, agents) + space.start).astype(space.dtype, copy=False)
        else:
            actions = env.batch_action_space.sample()
        return env.absent_filled(actions, self._agents()[0])

    def transition(self, obs: Any, action: Any, output: Mapping[str, Any]
                   ) -> Tuple[Dict[str, Any], Any]:
        cursor = self.cursor
        mask = cursor.mask
        result = self.env.step(action)
        record = step_record(obs, action, output, result)
        record["agent_mask"] = result.agent_mask
        record["next_agent_mask"] = result.next_agent_mask
        record["global_state"] = result.global_state
        record["next_global_state"] = result.next_global_state
        if mask is not None:
            record["action_mask"] = mask
            record["next_action_mask"] = result.next_action_mask
        cursor.obs = result.obs
        cursor.mask = self.env.action_mask
        cursor.agents = (self.env.agent_mask, self.env.global_state)
        return record, result
