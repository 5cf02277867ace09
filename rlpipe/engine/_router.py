"""`task.router`: what a script asks to learn whether it runs as one of several processes.

DI-engine's scripts guard their distributed set-up with `if task.router.is_active:` and pick
roles by `task.router.node_id`. Here a process is one of several exactly when it was started
by `rlpipe.engine.parallel.launch` (it has a `link()`); a script run on its own is not, so
those blocks are skipped and every middleware runs in this one process.
"""
from __future__ import annotations

from ._link import link
from ._roles import Role


class Router:
    """Read-only facts about this process's place in a run (nothing to configure)."""

    @property
    def is_active(self) -> bool:
        """True in a process started by `parallel.launch`, False in a script run on its own."""
        return link() is not None

    @property
    def node_id(self) -> int:
        """0 for the learner and a single process; 1 for the evaluator process; collectors
        after it (from 2 with an evaluator process, else from 1).

        DI-engine's launcher numbers processes in start order, and its example scripts
        (ppo.py, dqn_dist.py) make node 0 the learner and node 1 the evaluator; the numbering
        here follows them, so launch such a script with `evaluator=True`."""
        current = link()
        if current is None or current.role is Role.LEARNER:
            return 0
        if current.role is Role.EVALUATOR:
            return 1
        return 1 + int(current.evaluator) + int(current.index)

    def __repr__(self) -> str:
        return f"Router(is_active={self.is_active}, node_id={self.node_id})"
