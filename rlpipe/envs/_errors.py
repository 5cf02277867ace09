"""Errors raised by the environment layer."""

from __future__ import annotations

from typing import Any

__all__ = ["EnvFailureError", "MissingDependencyError", "UnknownEnvError"]


class UnknownEnvError(ValueError):
    """An environment name is neither a registered short name nor a gymnasium id."""


class MissingDependencyError(ImportError):
    """An environment needs an optional package that is not installed."""


class EnvFailureError(RuntimeError):
    """An environment kept failing and could not be recovered by restarting it.

    `env_label` names the env (e.g. ``CartPole-v1``) and `last_traceback` holds the env's own
    traceback of its last failure, where known (None otherwise), so a caller can report them
    without the whole message. Both survive pickling (async workers, Ray).
    """

    def __init__(
        self, message: str, env_label: str | None = None, last_traceback: str | None = None
    ) -> None:
        super().__init__(message)
        if isinstance(message, EnvFailureError):  # re-raised as exctype(value) by gymnasium
            env_label = env_label or message.env_label
            last_traceback = last_traceback or message.last_traceback
        self.env_label = env_label
        self.last_traceback = last_traceback

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.env_label, self.last_traceback))
