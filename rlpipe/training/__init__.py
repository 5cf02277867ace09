"""Training a zoo entry (the scripting form of `rlpipe train`): `train` (a new run folder),
`resume` (a run folder's newest resumable checkpoint) and `Interrupted` (a graceful stop on
SIGINT/SIGTERM). It sits above the zoo (it asks the registry for the entry) and below the
command line: run.py reads the request, launch.py runs it in its folder, stop.py stops it."""
from .run import Interrupted, resume, train

__all__ = ["Interrupted", "resume", "train"]
