"""Errors raised by the environment layer."""

from __future__ import annotations

__all__ = ["EnvFailureError", "MissingDependencyError", "UnknownEnvError"]


class UnknownEnvError(ValueError):
    """An environment name is neither a registered short name nor a gymnasium id."""


class MissingDependencyError(ImportError):
    """An environment needs an optional package that is not installed."""


class EnvFailureError(RuntimeError):
    """An environment kept failing and could not be recovered by restarting it."""
