"""The zoo: one folder per environment, one module per algorithm, each declaring its `Entry`
record (`registry.py`); `ALGO@ENV` entries are built by `generic.py`.

The names below are imported on first use (PEP 562), so that `rlpipe list` and the command
line's parser read the zoo's names without importing torch and the envs that training needs.
Training an entry is `rlpipe.training` (`rlpipe.train`, `rlpipe.resume`)."""
import importlib
from typing import Any

_WHERE = {"ENTRIES": "registry", "Entry": "registry", "MissingDependencyError": "registry",
          "get_entry": "registry", "list_entries": "registry"}

__all__ = ["ENTRIES", "Entry", "MissingDependencyError", "get_entry", "list_entries"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'rlpipe.zoo' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(list(globals()) + __all__)
