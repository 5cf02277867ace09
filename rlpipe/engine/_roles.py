"""Process roles of a distributed run (a single process has none and serves them all)."""
from __future__ import annotations

import enum


class Role(str, enum.Enum):
    """What a process does in a distributed run; `task.role` is this enum."""

    LEARNER = "learner"
    COLLECTOR = "collector"
    EVALUATOR = "evaluator"

    @classmethod
    def parse(cls, role: "Role | str") -> "Role":
        """`role` as a Role; accepts the enum or its value ("learner"); raises ValueError otherwise."""
        try:
            return cls(role)
        except ValueError:
            valid = ", ".join(repr(r.value) for r in cls)
            raise ValueError(f"unknown role {role!r}: use Role.LEARNER, Role.COLLECTOR or "
                             f"Role.EVALUATOR (or one of {valid})") from None
