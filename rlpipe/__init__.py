"""rlpipe: reinforcement learning as a pipeline of small middleware over a typed context."""
__version__ = "0.1.0"
from rlpipe._threads import apply_thread_policy, set_num_threads
from rlpipe._script import ding_init, set_pkg_seed
from rlpipe.engine import Task, task

__all__ = ["Task", "ding_init", "set_num_threads", "set_pkg_seed", "task", "__version__"]

apply_thread_policy()  # torch imported before rlpipe: one intra-op thread (see rlpipe/_threads.py)
