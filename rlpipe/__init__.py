"""rlpipe: reinforcement learning as a pipeline of small middleware over a typed context."""
__version__ = "0.1.0"
from typing import Any

from rlpipe._threads import apply_thread_policy, set_num_threads
from rlpipe._script import ding_init, set_pkg_seed
from rlpipe.data_parallel import DDPContext, get_rank, get_world_size, to_ddp_config
from rlpipe.engine import Task, task

__all__ = ["DDPContext", "Task", "ding_init", "get_rank", "get_world_size", "resume",
           "set_num_threads", "set_pkg_seed", "task", "to_ddp_config", "train", "__version__"]

apply_thread_policy()  # torch imported before rlpipe: one intra-op thread (see rlpipe/_threads.py)


def __getattr__(name: str) -> Any:
    """`rlpipe.train` and `rlpipe.resume` (rlpipe/training/), imported on first use so that
    `import rlpipe` imports no torch."""
    if name not in ("train", "resume"):
        raise AttributeError(f"module 'rlpipe' has no attribute {name!r}")
    from rlpipe import training

    value = getattr(training, name)
    globals()[name] = value
    return value
