"""Typed contexts: the only channel between middleware."""
from ._base import Context, ContextFieldError, field_names
from ._online import OfflineRLContext, OnlineRLContext

__all__ = ["Context", "ContextFieldError", "OfflineRLContext", "OnlineRLContext", "field_names"]
