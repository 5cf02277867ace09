"""The zoo: one folder per environment, one module per algorithm (`config` and `main(cfg)`).

The names below are imported on first use (PEP 562), so that `rlpipe list` and the command
line's parser read the zoo's names without importing torch and the envs that training needs."""
import importlib
from typing import Any

_WHERE = {"ENTRIES": "_registry", "Entry": "_registry", "MissingDependencyError": "_registry",
          "get_entry": "_registry", "list_entries": "_registry", "Interrupted": "_train",
          "resume": "_train", "train": "_train"}

__all__ = ["ENTRIES", "Entry", "Interrupted", "MissingDependencyError", "get_entry",
           "list_entries", "resume", "train"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'rlpipe.zoo' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(list(globals()) + __all__)
