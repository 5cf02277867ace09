"""A graceful stop on SIGINT/SIGTERM: the run ends after its current iteration with a final
checkpoint (`graceful_stop`), and `Interrupted` says so, naming the folder to resume."""
from __future__ import annotations

import contextlib
import logging
import signal
import threading
from typing import Any, Dict, Iterator, List, Optional


class Interrupted(Exception):
    """The run was stopped by SIGINT/SIGTERM after finishing its iteration and checkpointing.

    `run_dir`: the run's folder (named in the message); `summary`: what the run returned (its
    final evaluation included) when it got that far, else None."""

    def __init__(self, signum: int, run_dir: Optional[str] = None,
                 summary: Optional[Dict[str, Any]] = None) -> None:
        folder = run_dir if run_dir else "RUN_DIR"
        super().__init__(f"stopped by {signal.Signals(signum).name}; the run folder {folder} "
                         f"holds a final checkpoint: continue with "
                         f"`rlpipe train --resume {folder}`")
        self.signum = signum
        self.signal_name = signal.Signals(signum).name
        self.run_dir = run_dir
        self.summary = summary
        self.exit_code = 128 + signum  # 130 for SIGINT, 143 for SIGTERM


@contextlib.contextmanager
def graceful_stop() -> Iterator[List[int]]:
    """First SIGINT/SIGTERM: end the run after the current iteration with `task.end_run`
    (the checkpoint saver writes final.pt, envs and threads are closed; the summary and log
    name the signal; a SIGTERM skips the final evaluation: `Task.end_run_for_signal`), then
    raise `Interrupted`. A second one aborts at once."""
    from rlpipe.engine import task

    received: List[int] = []

    def handle(signum: int, frame: Any) -> None:
        if received:
            raise KeyboardInterrupt
        received.append(signum)
        logging.getLogger("rlpipe").warning("%s: %s", signal.Signals(signum).name,
                                            task.end_run_for_signal(signum))

    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = {s: signal.signal(s, handle) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    if received:
        raise Interrupted(received[0])
