"""The zoo: one folder per environment, one module per algorithm (`config` and `main(cfg)`)."""
from ._registry import ENTRIES, Entry, MissingDependencyError, get_entry, list_entries
from ._train import Interrupted, resume, train

__all__ = ["ENTRIES", "Entry", "Interrupted", "MissingDependencyError", "get_entry",
           "list_entries", "resume", "train"]
