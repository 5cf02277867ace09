"""Waiting on a training subprocess from a test."""
import os
import time


def wait_for_periodic_checkpoint(proc, run_dir: str, timeout: float = 120.0) -> None:
    """Return once the run in `run_dir` has written any `iter_*.pt`; fail if `proc` exits first.

    Any periodic checkpoint, not one named file: `CkptSaver` prunes older ones, so on a fast
    machine a given `iter_N.pt` can come and go between two polls.
    """
    ckpt_dir = os.path.join(run_dir, "ckpt")
    deadline = time.time() + timeout
    while not (os.path.isdir(ckpt_dir) and any(n.startswith("iter_") for n in os.listdir(ckpt_dir))):
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.time() < deadline, f"no checkpoint after {timeout:.0f} s"
        time.sleep(0.2)
