"""Errors raised by the engine."""
from __future__ import annotations

from typing import Iterable, List, Union


class PipelineError(Exception):
    """The middleware chain cannot run as assembled; raised before any middleware runs.

    `problems` holds one message per problem found (each says what, where and how to fix it).
    """

    def __init__(self, problems: Union[str, Iterable[str]]) -> None:
        self.problems: List[str] = [problems] if isinstance(problems, str) else list(problems)
        if len(self.problems) == 1:
            message = self.problems[0]
        else:
            lines = "\n".join(f"  {i}. {p}" for i, p in enumerate(self.problems, 1))
            message = f"the pipeline has {len(self.problems)} problems:\n{lines}"
        super().__init__(message)
