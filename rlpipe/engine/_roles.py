"""Process roles of a distributed run (a single process has none and serves them all)."""
from __future__ import annotations

import enum
from typing import FrozenSet, Iterable, Optional, Set, Tuple


class Role(str, enum.Enum):
    """What a process does in a distributed run; `task.role` is this enum."""

    LEARNER = "learner"
    COLLECTOR = "collector"
    EVALUATOR = "evaluator"
    FETCHER = "fetcher"
    """DI-engine's role of a process that only fetches data for a learner. rlpipe's launchers
    start no fetcher process, so middleware of this role run where no role is set (one process)
    or where a script adds it with `task.add_role(Role.FETCHER)`."""

    @classmethod
    def parse(cls, role: "Role | str") -> "Role":
        """`role` as a Role; accepts the enum or its value ("learner"); raises ValueError otherwise."""
        try:
            return cls(role)
        except ValueError:
            names = ", ".join(f"Role.{r.name}" for r in cls)
            valid = ", ".join(repr(r.value) for r in cls)
            raise ValueError(f"unknown role {role!r}: use one of {names} (or one of {valid})"
                             ) from None


#: (process name, roles) given by `parallel.launch` to this process; None in a single process.
_LAUNCHED: Optional[Tuple[str, FrozenSet[Role]]] = None


def set_launched_roles(name: Optional[str], roles: Iterable[Role] = ()) -> None:
    """Record the roles the launcher gave this process (`name` None: a single process again);
    `_link.set_link` calls it, so that `add_role` refuses a role no other process would play."""
    global _LAUNCHED
    _LAUNCHED = None if name is None else (name, frozenset(roles))


class RolesMixin:
    """The roles part of `Task`: which roles this process serves."""

    _roles: Set[Role]

    def add_role(self, role: "Role | str") -> "RolesMixin":
        """Declare a role of this process (a single process adds none and serves every role).
        In a process started by `parallel.launch` the launcher gave the roles: adding another
        is an error, since no other process would then play this one's."""
        parsed = Role.parse(role)
        if _LAUNCHED is not None and parsed not in _LAUNCHED[1] and parsed is not Role.FETCHER:
            name, given = _LAUNCHED
            raise ValueError(f"add_role({parsed.value!r}): this process was launched as the "
                             f"{name} (roles {sorted(r.value for r in given)}); "
                             f"a DI-engine script's node 1 is the evaluator, so launch it with "
                             f"evaluator=True (task.router.node_id numbers it so)")
        self._roles.add(parsed)
        return self

    def has_role(self, role: "Role | str") -> bool:
        """Whether this process plays `role`: True for every role while no role was added (one
        process plays them all, as in DI-engine), else whether `role` was added."""
        parsed = Role.parse(role)
        return not self._roles or parsed in self._roles

    @property
    def roles(self) -> FrozenSet[Role]:
        """The roles added (empty in a single process)."""
        return frozenset(self._roles)

    def serves(self, role: "Role | str") -> bool:
        """Same as `has_role`: True when no role was added (single process) or `role` was added.

        `use()` replaces a middleware whose contract names a role this task does not serve by a
        no-op (`void()`), so one script serves every process of a distributed run."""
        return self.has_role(role)
