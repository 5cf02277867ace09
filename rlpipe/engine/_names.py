"""How middleware are named in messages and in the profile."""
from __future__ import annotations

import functools
from typing import Any

_NAME_ATTR = "_rlpipe_name"


def middleware_name(fn: Any) -> str:
    """A short readable name: the function's qualified name (without `<locals>`) or the class name."""
    explicit = getattr(fn, _NAME_ATTR, None)
    if isinstance(explicit, str):
        return explicit
    if isinstance(fn, functools.partial):
        return middleware_name(fn.func)
    qualname = getattr(fn, "__qualname__", None)
    if isinstance(qualname, str) and not isinstance(fn, type):
        return qualname.replace(".<locals>", "")
    if isinstance(fn, type):
        return fn.__name__
    return type(fn).__name__


def set_name(fn: Any, name: str) -> None:
    """Give `fn` an explicit middleware name (used by composite middleware)."""
    try:
        setattr(fn, _NAME_ATTR, name)
    except (AttributeError, TypeError):  # builtins and slotted objects: keep their own name
        pass
