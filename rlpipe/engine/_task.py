"""`Task`: runs a chain of middleware over a context, in order (sync) or as a dataflow graph (async)."""
from __future__ import annotations

import logging
import signal
import threading
import time
import types
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, List, Optional, Tuple, Type, Union

from rlpipe.contexts import Context, OnlineRLContext

from . import _current
from ._compose import Parallel, Serial
from ._contract import Contract, contract, contract_of
from ._errors import PipelineError
from ._events import EventBus, EventsMixin
from ._flow import Flow, Node
from ._iterate import iterate_async, iterate_sync
from ._wrappers import Locked, decorated, lock_of, split
from ._listeners import warn_unheard_listeners
from ._names import middleware_name, set_name
from ._profile import MiddlewareStats, Profile
from ._roles import Role, RolesMixin
from ._router import Router
from ._scheduler import dependencies
from ._shared import SharedMixin, SharedObjects
from ._validate import resolve_chain, validate_chain

Middleware = Callable[[Any], Any]
_VOID_ATTR = "_rlpipe_void"
log = logging.getLogger(__name__)


class Task(RolesMixin, EventsMixin, SharedMixin):
    """Runs middleware over a context. `task` is a global instance; make others with `Task()`.

    >>> t = Task()
    >>> with t.start():
    ...     _ = t.use(lambda ctx: None)
    ...     t.run(max_step=2)
    """

    role: Type[Role] = Role
    router: Router = Router()
    """`task.router.is_active`: whether this process is one of a launched run's (see _router)."""

    def __init__(self) -> None:
        self._chain: List[Node] = []
        self._wrappers: List[Callable[[Middleware], Middleware]] = []
        self._events = EventBus()
        self._undeclared_emits: set = set()
        self._flow = Flow()
        self._roles: set = set()
        self._ctx: Optional[Context] = None
        self._ctx_used = False
        self._started = False
        self._running = False
        self._async = False
        self._executor: Optional[ThreadPoolExecutor] = None
        self._finish = False
        self._finish_reason: Optional[str] = None
        self._final_eval = True
        self._lock = threading.RLock()  # the task-wide lock of use(fn, lock=True)
        self._shared = SharedObjects()
        self._reset_stats()

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self, async_mode: bool = False, ctx: Optional[Context] = None,
              n_workers: Optional[int] = None, n_async_workers: Optional[int] = None) -> "Task":
        """Begin a run: set the context (default `OnlineRLContext()`); use as a context manager.

        In async mode one thread pool of `n_workers` threads (default: the executor's default)
        is created here and shut down by `stop()`. `n_async_workers` is DI-engine's name for it:
        it sets the pool size in async mode and, as in DI-engine, is unused in sync mode
        (where `n_workers` is refused, since it can only be a mistake there).
        """
        if n_async_workers is not None:
            if isinstance(n_async_workers, bool) or not isinstance(n_async_workers, int) \
                    or n_async_workers < 1:
                raise ValueError(f"task.start(n_async_workers={n_async_workers!r}): must be an int "
                                 f">= 1 (threads of the async worker pool)")
            if n_workers is not None and n_workers != n_async_workers:
                raise ValueError(f"task.start(n_workers={n_workers}, n_async_workers="
                                 f"{n_async_workers}): two names for one pool size; pass one")
            if async_mode:
                n_workers = n_async_workers
        if self._started:
            raise RuntimeError("this Task is already started: call stop() (or leave its `with` "
                               "block) before starting it again")
        if ctx is None:
            ctx = OnlineRLContext()
        elif not isinstance(ctx, Context):
            raise TypeError(f"start(ctx=...) takes a rlpipe.contexts.Context instance, got "
                            f"{type(ctx).__name__}; e.g. ctx=OnlineRLContext()")
        if n_workers is not None:
            if not async_mode:
                raise ValueError("n_workers applies to async_mode=True only; drop it or set "
                                 "async_mode=True")
            if n_workers < 1:
                raise ValueError(f"n_workers must be at least 1, got {n_workers}")
        self._ctx = ctx
        self._ctx_used = False
        self._async = bool(async_mode)
        self._finish, self._finish_reason, self._final_eval = False, None, True
        self._reset_stats()
        if self._async:
            self._executor = ThreadPoolExecutor(max_workers=n_workers,
                                                thread_name_prefix="rlpipe-task-worker")
        self._started = True
        return self

    def __enter__(self) -> "Task":
        return self

    def __exit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> bool:
        if exc is None:
            self.stop()
            return False
        try:
            self.stop()
        except Exception as stop_exc:  # keep the run's error first; report this one on it
            exc.add_note(f"stopping the task after this error also failed: {stop_exc!r}")
        return False

    def stop(self) -> None:
        """End the run: shut the worker pool down, `close()` each middleware once (also after an
        error), and clear the chain, wrappers and event listeners. Roles are kept."""
        if self._running:
            raise RuntimeError("stop() was called during run(); to end the run from a "
                               "middleware set task.finish = True")
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
        chain, self._chain = self._chain, []
        self._wrappers = []
        self._events.clear()
        self._shared.clear()
        self._started = False
        errors: List[BaseException] = []
        seen: set = set()
        for node in reversed(chain):
            if id(node.original) in seen or isinstance(node.original, type):
                continue
            seen.add(id(node.original))
            close = getattr(node.original, "close", None)
            if not callable(close):
                continue
            try:
                close()
            except Exception as exc:  # close every middleware, then report
                exc.add_note(f"in close() of middleware {node.name!r}")
                errors.append(exc)
        if errors:
            for other in errors[1:]:
                errors[0].add_note(f"close() of another middleware also failed: {other!r}")
            raise errors[0]

    @property
    def running(self) -> bool:
        """True from `start()` until `stop()` (DI-engine's `task.running`), during and between
        `run()` calls."""
        return self._started

    # ---- the chain -------------------------------------------------------------------------

    def use(self, fn: Middleware, lock: Union[bool, Any] = False) -> "Task":
        """Append a middleware (function, one-`yield` generator function, or callable object).

        An object middleware with an `attach(task)` method gets it called here, once, so it
        can subscribe to the task's events (e.g. the checkpoint saver listens to "eval_end").

        `lock` (as in DI-engine): True runs `fn` under the task-wide lock, a lock object under
        that lock; in async mode a middleware never runs while another holding the same lock
        runs. Its parts before and after `yield` each hold the lock whole.
        """
        if not callable(fn):
            raise TypeError(f"task.use() takes a middleware: a callable fn(ctx), got {fn!r}")
        declared = contract_of(fn)
        held = lock_of(lock, self._lock)
        if declared is not None and declared.role is not None and not self.serves(declared.role):
            # another process's middleware: a no-op here (still closed at stop(), never attached)
            return self._append(Node(self.void(), fn, f"{middleware_name(fn)} (void: "
                                     f"{declared.role.value} role)", Contract()))
        attach = getattr(fn, "attach", None)
        if callable(attach) and not isinstance(fn, type):
            attach(self)  # lets an object middleware subscribe to this task's events
        wrapped = fn if held is None else Locked(self._flow, fn, held)
        for decorator in self._wrappers:
            wrapped = decorated(decorator, wrapped, declared)
        return self._append(Node(wrapped, fn, middleware_name(fn), contract_of(wrapped) or declared))

    def _append(self, node: Node) -> "Task":
        self._chain.append(node)
        self._counts.append(0)
        self._totals.append(0.0)
        self._names.append(node.name)
        return self

    def use_wrapper(self, decorator: Callable[[Middleware], Middleware]) -> "Task":
        """Wrap every middleware of the chain, those already `use()`d and those to come, as
        DI-engine does: each runs as `decorator(fn)` (the no-ops of other roles excepted)."""
        if not callable(decorator):
            raise TypeError(f"use_wrapper() takes a callable decorator, got {decorator!r}")
        if self._running:
            raise RuntimeError("use_wrapper() was called during run(); add wrappers before run()")
        for i, node in enumerate(self._chain):
            if not getattr(node.fn, _VOID_ATTR, False):
                self._chain[i] = node._replace(fn=decorated(decorator, node.fn, node.contract))
        self._wrappers.append(decorator)
        return self

    def void(self) -> Middleware:
        """A middleware that does nothing and touches no field (for other roles' middleware)."""
        @contract()
        def void(ctx: Any) -> None:
            return None
        set_name(void, "void")
        setattr(void, _VOID_ATTR, True)
        return void

    def serial(self, *fns: Middleware) -> Middleware:
        """One middleware that runs `fns` in order (their post-`yield` parts in reverse).
        A child of a role this process does not serve is left out (as `use()` would void it)."""
        return Serial(self._flow, self._served(fns))

    def parallel(self, *fns: Middleware) -> Middleware:
        """One middleware that runs `fns` concurrently in threads; they must not conflict.
        A child of a role this process does not serve is left out."""
        return Parallel(self._flow, self._served(fns))

    def _served(self, fns: Tuple[Middleware, ...]) -> List[Middleware]:
        kept = []
        for fn in fns:
            c = contract_of(fn)
            kept.append(fn if c is None or c.role is None or self.serves(c.role) else self.void())
        return kept

    # ---- context ---------------------------------------------------------------------------

    @property
    def ctx(self) -> Context:
        """The current iteration's context."""
        if self._ctx is None:
            raise RuntimeError("task.ctx is set by task.start(); start the task first")
        return self._ctx

    def renew(self) -> "Task":
        """Replace the context with `ctx.renew()` (kept fields carried, total_step + 1)."""
        self._ctx = self.ctx.renew()
        self._ctx_used = False
        return self

    @property
    def finish(self) -> bool:
        """Set to True (from any middleware) to end the run after the current iteration;
        `end_run(reason)` does the same and records why."""
        return self._finish

    @finish.setter
    def finish(self, value: bool) -> None:
        self._finish = bool(value)
        if not self._finish:
            self._finish_reason, self._final_eval = None, True

    def end_run(self, reason: str, evaluate: bool = True) -> None:
        """Ask the run to end after the current iteration, saying why: `finish` becomes True
        (so the checkpoint saver and final evaluation still get their last call) and `reason`
        is kept as `finish_reason` (the first reason asked for wins) and logged when the run
        ends. `evaluate=False` skips the final evaluation, for a stop with a deadline (a
        scheduler's SIGTERM, followed by SIGKILL when its grace period ends), so that the
        checkpoint is written at once. For code outside the chain too: a signal handler, an
        event listener, another thread. A middleware that calls it declares
        `@contract(..., finishes=True)`."""
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError(f"end_run(reason={reason!r}): say why the run ends, e.g. "
                             f"task.end_run('stopped by SIGINT')")
        if self._finish_reason is None:
            self._finish_reason = reason
        if not evaluate:
            self._final_eval = False
        self._finish = True

    def end_run_for_signal(self, signum: int) -> str:
        """End the run as the signal `signum` asks; returns what is done, for the log. A
        Ctrl-C (SIGINT) gets the final weights evaluated. A SIGTERM comes from a scheduler or
        a container runtime, which sends SIGKILL when its grace period (often 10-30 s) ends,
        sooner than an evaluation of long episodes may: the run checkpoints without one."""
        term = signum == signal.SIGTERM
        self.end_run(f"stopped by {signal.Signals(signum).name}", evaluate=not term)
        return ("finishing the current iteration and checkpointing"
                + (", without a final evaluation" if term else "") + " (again to abort)")

    @property
    def final_eval_wanted(self) -> bool:
        """False once an `end_run(..., evaluate=False)` asked to end without evaluating the
        final weights."""
        return self._final_eval

    @property
    def finish_reason(self) -> Optional[str]:
        """Why the run ends (or ended): the first `end_run(reason)` of this run, None when
        nothing asked (`max_step` reached, or `finish` set without a reason)."""
        return self._finish_reason

    @property
    def async_mode(self) -> bool:
        return self._async

    # ---- running ---------------------------------------------------------------------------

    def run(self, max_step: Optional[int] = None) -> None:
        """Validate the chain, then run iterations until `finish` or `max_step` iterations.

        On the last iteration under `max_step`, `finish` is already True while middleware run.
        Emits "finish" (with the context) when the run ends without error; a run ended by
        `end_run(reason)` logs the reason first.
        """
        if not self._started:
            raise RuntimeError("task.run() needs a started task: `with task.start(): ...`")
        if self._running:
            raise RuntimeError("task.run() is already running")
        if max_step is not None and max_step < 1:
            raise ValueError(f"max_step must be a positive number of iterations or None, got {max_step}")
        nodes = list(self._chain)
        if not nodes:
            raise PipelineError("the chain is empty: add middleware with task.use(fn) before task.run()")
        entries = resolve_chain([(n.name, n.contract) for n in nodes], self.ctx)
        validate_chain(entries, self.ctx)
        warn_unheard_listeners([(n.name, n.contract) for n in nodes], self._events.events())
        if self._ctx_used:
            self.renew()
        flow, counts, totals = self._flow, self._counts, self._totals
        if self._async:
            deps = dependencies([c for _, c in entries])
            executor = self._executor
            assert executor is not None
            iterate = lambda ctx: iterate_async(  # noqa: E731
                executor, flow, ctx, nodes, deps, counts, totals)
        else:
            iterate = lambda ctx: iterate_sync(flow, ctx, nodes, counts, totals)  # noqa: E731
        self._finish, self._finish_reason, self._final_eval = False, None, True
        self._running = True
        saved_pending = self._flow.swap([])
        outer_task = _current._running
        _current.set_running(self)
        started = time.perf_counter()
        # the loop reads the task's fields directly (no property, no method of the task): it
        # runs once per iteration, and a sync iteration of a few light middleware costs µs
        last = -1 if max_step is None else max_step - 1
        try:
            step = 0
            while True:
                if step == last:
                    self._finish = True
                self._ctx_used = True
                iterate(self._ctx)
                step += 1
                self._iterations += 1
                if self._finish:
                    break
                self._ctx = self._ctx.renew()  # renew(), less the flag set again above
        finally:
            self._wall += time.perf_counter() - started
            self._running = False
            self._flow.swap(saved_pending)
            _current.set_running(outer_task)
        if self._finish_reason is not None:
            log.info("the run ended after iteration %d: %s", self._ctx.total_step,
                     self._finish_reason)
        self.emit("finish", self._ctx)

    # ---- composite middleware --------------------------------------------------------------

    def forward(self, fn: Middleware, ctx: Optional[Context] = None) -> Optional[types.GeneratorType]:
        """Run `fn` up to its `yield` inside the calling middleware; `backward()` runs the rest.

        Returns the suspended generator, or None when `fn` did not yield.
        """
        if ctx is None:
            ctx = self.ctx
        name = middleware_name(fn)
        try:
            item = self._flow.enter(fn, ctx, name)
        except BaseException as exc:
            exc.add_note(f"in middleware {name!r} (run by task.forward)")
            raise
        if item is None:
            return None
        self._flow.pending().append(item)
        return item.gen

    def backward(self) -> None:
        """Run the post-`yield` parts of what this middleware forwarded, last first."""
        self._flow.unwind()

    def wrap(self, fn: Middleware, lock: Union[bool, Any] = False
             ) -> Callable[[Context], Callable[[], None]]:
        """`wrap(fn)(ctx)` runs `fn` to its yield and returns a callable that runs the rest
        (a no-op callable when `fn` is not a generator). `lock` as in `use()`."""
        return split(self._flow, fn, lock_of(lock, self._lock))

    # ---- profile ---------------------------------------------------------------------------

    def _reset_stats(self) -> None:
        self._counts: List[int] = [0] * len(self._chain)
        self._totals: List[float] = [0.0] * len(self._chain)
        self._names: List[str] = [n.name for n in self._chain]
        self._iterations = 0
        self._wall = 0.0

    def profile(self) -> Profile:
        """Per-middleware calls and time, iterations and wall time since `start()`."""
        rows = tuple(MiddlewareStats(i, name, self._counts[i], self._totals[i])
                     for i, name in enumerate(self._names))
        return Profile(rows, self._iterations, self._wall, self._async)

    def __reduce__(self) -> Any:
        # A script's main() that uses the global `task` is pickled (by value) to Ray actors:
        # the global task travels as a reference to the global task of the receiving process.
        if self is _current.global_task():
            return (_global_task, ())
        raise TypeError("a Task instance cannot be pickled (it holds threads and the chain); "
                        "in a function sent to other processes use the global `task` or make "
                        "the Task inside the function")

    def __repr__(self) -> str:
        state = "started" if self._started else "stopped"
        mode = "async" if self._async else "sync"
        return f"<Task {state} {mode}, {len(self._chain)} middleware>"


def _global_task() -> Task:
    """The global task of this process (what the global task of another process unpickles as)."""
    return _current.global_task()
