"""rlpipe: reinforcement learning as a pipeline of small middleware over a typed context."""
__version__ = "0.1.0"
from rlpipe._threads import apply_thread_policy, set_num_threads
from rlpipe.engine import Task, task

__all__ = ["Task", "set_num_threads", "task", "__version__"]

apply_thread_policy()  # torch imported before rlpipe: one intra-op thread (see rlpipe/_threads.py)
