"""Training a zoo entry (the scripting form of `rlpipe train`): `train` (a new run folder),
`resume` (a run folder's newest resumable checkpoint), `Interrupted` (a graceful stop on
SIGINT/SIGTERM), and `drop_stale_stop_value`, the rule `rlpipe config` shares with `train`.
It sits above the zoo (it asks the registry for the entry) and below the command line."""
from .run import Interrupted, drop_stale_stop_value, resume, train

__all__ = ["Interrupted", "drop_stale_stop_value", "resume", "train"]
