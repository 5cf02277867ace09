"""The restart budget of an env manager: how many restarts are allowed within how many steps,
and how each recovered failure is logged (a crash loop's repeated traceback only once)."""

from __future__ import annotations

import logging
from collections import deque

import numpy as np

from rlpipe.envs._errors import EnvFailureError
from rlpipe.envs._outcome import Failure

__all__ = ["RestartBudget"]

log = logging.getLogger("rlpipe.envs")


class RestartBudget:
    """At most `max_restarts` restarts within any `window` steps (None: over the whole life).

    `record(failures, step, env_label)` logs each failure on the ``"rlpipe.envs"`` logger (with
    the env's traceback, or one line when it repeats the previous error) and raises
    `EnvFailureError` naming the env and its last traceback once the budget is exceeded.
    """

    def __init__(self, max_restarts: int, window: int | None) -> None:
        if (not isinstance(max_restarts, (int, np.integer)) or isinstance(max_restarts, bool)
                or max_restarts < 0):
            raise ValueError(
                f"EnvManager: max_restarts must be an int >= 0, got {max_restarts!r}")
        if window is not None and (not isinstance(window, (int, np.integer))
                                   or isinstance(window, bool) or window < 1):
            raise ValueError(
                f"EnvManager: restart_window must be None or an int >= 1 (steps), got {window!r}")
        self.max_restarts = max_restarts
        self.window = window
        # (step, restarts) of recent failures, oldest first: those within the window count
        self._log: deque[tuple[int, int]] = deque()
        self._last_error = ""  # the last line of the last failure's traceback

    def recent(self, step: int) -> int:
        """Restarts counted against `max_restarts` at `step`."""
        if self.window is not None:
            while self._log and self._log[0][0] <= step - self.window:
                self._log.popleft()
        return sum(n for _, n in self._log)

    def record(self, failures: list[Failure], step: int, env_label: str) -> None:
        """Count and log `failures` (at manager step `step`); raise past the budget."""
        where = "" if self.window is None else f" within {self.window} steps"
        for failure in failures:
            self._log.append((step, failure.count))
            error = _last_line(failure.text)
            text = (f" Same error as before: {error}" if error == self._last_error
                    else "\n" + failure.text)
            self._last_error = error
            log.warning(
                "env %s: %s (restart %d of at most %d%s; the episode in progress was dropped).%s",
                env_label, failure.what, self.recent(step), self.max_restarts, where, text,
            )
        recent = self.recent(step)
        if recent > self.max_restarts:
            last = failures[-1]
            raise EnvFailureError(
                f"env {env_label} needed {recent} restarts{where}, more than "
                f"max_restarts={self.max_restarts} (env.max_restarts / env.restart_window in a "
                f"run's config); fix the env or raise the limit. Last failure: {last.what}\n"
                f"{last.text}",
                env_label=env_label, last_traceback=last.text,
            )


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1].strip() if lines else ""
