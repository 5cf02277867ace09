"""The zoo: one folder per environment, one module per algorithm (`config` and `main(cfg)`)."""
from ._registry import ENTRIES, Entry, MissingDependencyError, get_entry, list_entries, train

__all__ = ["ENTRIES", "Entry", "MissingDependencyError", "get_entry", "list_entries", "train"]
