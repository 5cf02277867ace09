"""`make_acting`: which acting a policy gets in an env manager, decided once, when a collector
(or inferencer/rolloutor) is made or a loop outside training starts (`evaluate_episodes`, data
set collection, the export check): `MultiAgentActing` for a multi-agent env manager,
`RecurrentActing` for a recurrent policy, the plain `Acting` otherwise (at no cost)."""
from __future__ import annotations

from typing import Any, Optional

from ._acting import Acting, EnvCursor, RecurrentActing
from ._acting_agents import MultiAgentActing, is_multi_agent
from ._hidden import is_recurrent, policy_name


def make_acting(policy: Any, env: Any, cursor: Optional[EnvCursor] = None,
                random_collect_size: int = 0) -> Acting:
    """The acting of `policy` in `env` (see the module docstring)."""
    recurrent = is_recurrent(policy)
    if is_multi_agent(env):
        if recurrent:
            raise NotImplementedError(
                f"the recurrent {policy_name(policy)} in the multi-agent {env!r}: hidden state "
                f"per agent is not supported yet; use a feed-forward policy for multi-agent envs")
        return MultiAgentActing(policy, env, cursor, random_collect_size)
    if recurrent:
        return RecurrentActing(policy, env, cursor, random_collect_size)
    if cursor is not None and cursor.state is not None:
        raise ValueError(f"{cursor!r} holds a recurrent policy's hidden state; the feed-forward "
                         f"{policy_name(policy)} would leave it stale. Give it its own cursor: "
                         f"EnvCursor(env)")
    return Acting(policy, env, cursor, random_collect_size)
