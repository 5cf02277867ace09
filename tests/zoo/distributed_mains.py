"""Actor mains for the distributed tests: the zoo's role_main, with a process that kills itself.

Ray actors import this module (the driver's sys.path reaches them), so it holds nothing else.
"""
import os
import signal
import threading
import time

from rlpipe.engine import Role, parallel
from rlpipe.pipelines.distributed import role_main


def _kill_self_when(ready):
    def watch():
        while not ready():
            time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer or a lost machine would

    threading.Thread(target=watch, daemon=True).start()


def collector_dies_once(job, plain_cfg, after_env_steps):
    """Collector 0 kills its process (first start only) once the run has `after_env_steps`."""
    link = parallel.link()
    if link.role is Role.COLLECTOR and link.index == 0 and link.attempt == 0:
        _kill_self_when(lambda: link.state()["counters"].get("env_step", 0) >= after_env_steps)
    return role_main(job, plain_cfg)


def learner_dies(job, plain_cfg, min_iter):
    """The learner kills its process once it has written a periodic checkpoint at train_iter
    >= `min_iter` (the exact name depends on how many updates each iteration ran)."""
    if parallel.link().role is Role.LEARNER:
        folder = os.path.join(plain_cfg["run_dir"], "ckpt")

        def written():
            names = os.listdir(folder) if os.path.isdir(folder) else []
            return any(n.startswith("iter_") and n.endswith(".pt") and int(n[5:-3]) >= min_iter
                       for n in names)

        _kill_self_when(written)
    return role_main(job, plain_cfg)
