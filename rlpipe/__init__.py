"""rlpipe: reinforcement learning as a pipeline of small middleware over a typed context."""
__version__ = "0.1.0"
from rlpipe.engine import Task, task

__all__ = ["Task", "task", "__version__"]
