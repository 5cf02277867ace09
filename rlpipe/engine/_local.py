"""`launch(..., backend="local")`: a distributed run on this machine without Ray.

The learner runs `main()` in the calling process (its run folder, progress bar, log and signal
handling stay where they are); each collector, and the evaluator when asked for, is a child
process that runs the same `main()` with its role. The run's `Hub` lives in the learner's
process on an event-loop thread; a child reaches it through a pipe, one request and one reply
per `Link` call (weights, trajectories and evaluations are pickled through it).

Start method: "fork" where it is safe and available (Linux, CUDA not initialised in this
process): a child starts in milliseconds with the modules already imported. Elsewhere (or with
`start_method="spawn"`) a child is a fresh interpreter, which takes seconds to import torch and
needs the script's top-level code under `if __name__ == "__main__":`.

Failures: an exception in a child's `main()` ends the run and is raised in the learner's
process with the child's traceback. A child that dies (killed, out of memory) is started
again, up to `max_restarts` times, and the restart is counted in the hub. Children ignore
SIGINT: a Ctrl-C reaches the learner, which stops them.

`child_nice` lowers the children's (and their env workers') CPU priority by that much: in a
learner-bound run the learner then wins when they compete for a CPU (beside children at its own
priority it ran 10-20% slower in cartpole-dqn --async), while a child still gets every idle
CPU cycle.
"""
from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, List, Mapping, Optional, Sequence, Tuple

from ._current import global_task, set_running
from ._hub import Hub
from ._link import Link, LoopTransport, Transport, link, set_link
from ._roles import Role

log = logging.getLogger("rlpipe.engine.parallel")
_ERROR = "__error__"  # a child's message: its main() raised (value: the formatted traceback)


class ProcessFailedError(RuntimeError):
    """main() raised in a collector or evaluator process (its traceback is in the message)."""


class _PipeTransport(Transport):
    """A child's way to the hub: one request, one reply, over a pipe to the learner's process."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._lock = threading.Lock()  # async-mode middleware of one child may call concurrently

    def call(self, method: str, *args: Any) -> Any:
        with self._lock:
            self._conn.send((method, args))
            ok, value = self._conn.recv()
        if not ok:
            raise value
        return value

    def put(self, value: Any) -> Any:
        return value

    def get(self, ref: Any) -> Any:
        return ref


_FORKED_FROM_LEARNER: List[Mapping[str, Any]] = []


def _child_main(conn: Any, role: str, index: int, attempt: int, collectors: int,
                evaluator: bool, nice: int, main: Callable[..., Any], args: Sequence[Any],
                kwargs: Mapping[str, Any]) -> None:
    """Body of a child process: become a process of the run, run main(), report an error."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the learner's process handles Ctrl-C
    if nice:  # before main() starts env workers, so that they inherit it
        os.nice(nice)
    task = global_task()
    if task._started:  # forked from the learner mid-run (a restart): begin with a fresh task
        # the learner's middleware copied by the fork are kept referenced, never finalised:
        # closing them here would flush the learner's buffered rows into its files a second time
        _FORKED_FROM_LEARNER.append(dict(vars(task)))
        task.__init__()
        set_running(None)
    this = Link(_PipeTransport(conn), role, index, attempt, collectors, evaluator)
    set_link(this)
    for served in this.roles:
        task.add_role(served)
    try:
        main(*args, **kwargs)
    except BaseException:  # noqa: BLE001 - reported to the learner, which raises it
        text = traceback.format_exc()
        try:
            conn.send((_ERROR, (text,)))
        except OSError:
            pass
        raise
    finally:
        conn.close()


@dataclass
class _Child:
    name: str
    role: Role
    index: int
    attempt: int = 0
    process: Any = None
    conn: Any = None
    server: Optional[threading.Thread] = None
    done: bool = False  # main() returned or raised: not to be restarted
    started: bool = False  # its process was started
    spoke: bool = False  # it made a hub call since its last start
    reaping: threading.Lock = field(default_factory=threading.Lock)
    """Held around join/exitcode/is_alive: its serving thread and the stopping learner both
    wait for the process, and two concurrent waits race for the exit status (the loser's
    waitpid fails, and the process looks alive although it has exited)."""


@dataclass
class _Run:
    hub: Hub
    loop: asyncio.AbstractEventLoop
    ctx: Any
    call: Tuple[Any, ...]
    collectors: int
    evaluator: bool
    max_restarts: int
    children: List[_Child] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: bool = False
    child_nice: int = 0

    def hub_call(self, method: str, *args: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(getattr(self.hub, method)(*args), self.loop).result()


def _start(run: _Run, child: _Child, serve: bool = True) -> None:
    parent_end, child_end = run.ctx.Pipe(duplex=True)
    main, args, kwargs = run.call
    child.process = run.ctx.Process(
        target=_child_main, name=f"rlpipe-{child.name.replace(' ', '-')}", daemon=False,
        args=(child_end, child.role.value, child.index, child.attempt, run.collectors,
              run.evaluator, run.child_nice, main, tuple(args), dict(kwargs)))
    child.spoke = False
    child.process.start()
    child.started = True
    child_end.close()
    child.conn = parent_end
    if serve:
        _serve_in_thread(run, child)


def _serve_in_thread(run: _Run, child: _Child) -> None:
    child.server = threading.Thread(target=_serve, args=(run, child), daemon=True,
                                    name=f"rlpipe-serve-{child.name.replace(' ', '-')}")
    child.server.start()


def _serve(run: _Run, child: _Child) -> None:
    """Answer one child's hub calls until its pipe closes; then restart it if it died."""
    conn = child.conn
    while True:
        try:
            method, args = conn.recv()
        except (EOFError, OSError):
            break
        child.spoke = True
        if method == _ERROR:
            with run.lock:
                run.errors.append(f"{child.name} raised:\n{args[0]}")
            child.done = True
            run.hub_call("finish")
            break
        try:
            reply = (True, run.hub_call(method, *args))
        except Exception as err:  # noqa: BLE001 - handed back to the caller in the child
            reply = (False, err)
        try:
            conn.send(reply)
        except OSError:
            break
    conn.close()
    with child.reaping:
        child.process.join(timeout=5.0)
        exitcode = child.process.exitcode
    if child.done or run.stopping or exitcode == 0 or run.hub_call("state")["finished"]:
        child.done = True
        return
    if not child.spoke:  # it died starting up: a restart would fail the same way
        with run.lock:
            run.errors.append(
                f"{child.name} exited (code {exitcode}) before it reached the run; its error is "
                f"printed above. If it says 'An attempt has been made to start a new process "
                f"before the current process has finished its bootstrapping phase', put the "
                f"script's top-level code under `if __name__ == \"__main__\":` (a child started "
                f"with the 'spawn' method imports the main module)")
        child.done = True
        run.hub_call("finish")
        return
    if child.attempt >= run.max_restarts:
        with run.lock:
            run.errors.append(f"{child.name} died (exit code {exitcode}) and was restarted "
                              f"{child.attempt} times already (max_restarts={run.max_restarts})")
        child.done = True
        run.hub_call("finish")
        return
    child.attempt += 1
    total = run.hub_call("note_restart", child.name)
    log.warning("%s died (exit code %s); restarting it (its restart %d, %d in this run)",
                child.name, exitcode, child.attempt, total)
    _start(run, child)


def default_start_method() -> str:
    """"fork" on Linux while CUDA is not initialised in this process, else "spawn"."""
    if sys.platform != "linux" or "fork" not in multiprocessing.get_all_start_methods():
        return "spawn"
    torch = sys.modules.get("torch")
    cuda_up = torch is not None and torch.cuda.is_initialized()
    return "spawn" if cuda_up else "fork"


def launch_local(main: Callable[..., Any], collectors: int, evaluator: bool,
                 args: Sequence[Any], kwargs: Mapping[str, Any], queue_size: int,
                 max_restarts: int, grace_s: float, start_method: Optional[str] = None,
                 child_nice: int = 0) -> Any:
    """See `rlpipe.engine.parallel.launch(backend="local")`."""
    task = global_task()
    method = start_method or default_start_method()
    if method not in ("fork", "spawn") or method not in multiprocessing.get_all_start_methods():
        raise ValueError(f"launch(start_method={method!r}): use 'fork' or 'spawn' (this "
                         f"platform offers {multiprocessing.get_all_start_methods()})")
    hub = Hub(queue_size)
    loop = asyncio.new_event_loop()
    # started after the first children, so that a forked child copies no running thread
    loop_thread = threading.Thread(target=loop.run_forever, name="rlpipe-hub", daemon=True)
    if not isinstance(child_nice, int) or not 0 <= child_nice <= 19:
        raise ValueError(f"launch(child_nice={child_nice!r}): an int from 0 (the learner's "
                         f"priority) to 19 (the lowest)")
    run = _Run(hub, loop, multiprocessing.get_context(method), (main, args, kwargs),
               collectors, evaluator, max_restarts, child_nice=child_nice)
    layout = [(Role.COLLECTOR, i) for i in range(collectors)]
    if evaluator:
        layout.append((Role.EVALUATOR, 0))
    run.children = [_Child(f"collector {i}" if role is Role.COLLECTOR else role.value, role, i)
                    for role, i in layout]
    learner = Link(LoopTransport(hub, loop), Role.LEARNER, 0, 0, collectors, evaluator)
    roles_before = task.roles
    previous_link = link()
    interrupted = False
    try:
        for child in run.children:
            _start(run, child, serve=False)
        loop_thread.start()
        for child in run.children:
            _serve_in_thread(run, child)
        set_link(learner)
        for served in learner.roles:
            task.add_role(served)
        task.finish = False
        result = main(*args, **kwargs)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        set_link(previous_link)
        task._roles = set(roles_before)
        if loop_thread.is_alive():
            _stop(run, 0.0 if interrupted else grace_s)
            loop.call_soon_threadsafe(loop.stop)
            loop_thread.join(timeout=5.0)
        else:  # failed before the hub ran: nothing to tell the children, just stop them
            run.stopping = True
            _terminate(run, 0.0)
        loop.close()
    if run.errors:
        raise ProcessFailedError("a process of the run failed, so the run stopped:\n"
                                 + "\n".join(run.errors))
    return result


def _stop(run: _Run, grace_s: float) -> None:
    """Finish the run, give the children `grace_s` seconds to return, then terminate them."""
    run.stopping = True
    try:
        run.hub_call("finish")
    except RuntimeError as err:  # the loop already stopped
        log.debug("could not finish the hub: %r", err)
    _terminate(run, grace_s)


def _terminate(run: _Run, grace_s: float) -> None:
    """Wait up to `grace_s` seconds in all for the children to exit, then end those that did
    not (a warning says how long they were given)."""
    start = time.monotonic()
    deadline = start + grace_s
    for child in run.children:
        if child.started:
            with child.reaping:
                child.process.join(timeout=max(0.0, deadline - time.monotonic()))
    for child in run.children:
        process = child.process
        with child.reaping:
            alive = child.started and process.is_alive()
            if alive:
                log.warning("%s did not stop within %.1f s of the end of the run; terminating "
                            "it", child.name, time.monotonic() - start)
                process.terminate()
                process.join(timeout=5.0)
                if process.is_alive():
                    process.kill()
                    process.join()
        if child.server is not None:
            child.server.join(timeout=5.0)
