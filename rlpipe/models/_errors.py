"""Errors raised when a model does not fit its observation space or its input."""
from __future__ import annotations


class UnsupportedSpaceError(ValueError):
    """A gymnasium space that a model or policy cannot handle; the message says what is supported."""


class ObservationShapeError(ValueError):
    """An input tensor whose shape does not match the observation space the model was built for."""
