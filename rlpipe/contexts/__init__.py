"""Typed contexts: the only channel between middleware."""
from ._base import Context, ContextFieldError, field_names
from ._online import MultiAgentRLContext, OfflineRLContext, OnlineRLContext

__all__ = ["Context", "ContextFieldError", "MultiAgentRLContext", "OfflineRLContext",
           "OnlineRLContext", "field_names"]
