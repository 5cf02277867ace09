"""The zoo: one folder per environment, one module per algorithm (`config` and `main(cfg)`)."""
from ._registry import (ENTRIES, Entry, Interrupted, MissingDependencyError, get_entry,
                        list_entries, resume, train)

__all__ = ["ENTRIES", "Entry", "Interrupted", "MissingDependencyError", "get_entry",
           "list_entries", "resume", "train"]
