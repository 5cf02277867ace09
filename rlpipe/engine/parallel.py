"""One script, many processes: `launch(main, collectors=N)` runs `main()` in Ray actors with roles.

Each actor runs the same `main()`; before it starts, the global `task` gets the actor's role
(learner, collector or evaluator), so middleware of other roles become no-ops (`Task.use`), and
`link()` returns the actor's `Link` to the run's `Hub` (named queues, versioned blobs, counters,
the finish flag). In a single process `link()` is None. Ray is imported only inside `launch`:
this module imports without it.
"""
from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import logging
import os
import threading
import time
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from ._hub import Hub
from ._local import ProcessFailedError
from ._roles import Role

__all__ = ["Hub", "LearnerDiedError", "Link", "ProcessFailedError", "RayNotInstalledError",
           "Update", "launch", "link", "local_links", "require_ray"]

log = logging.getLogger(__name__)
INSTALL_HINT = 'pip install "rlpipe[ray]"'
_LINK: Optional["Link"] = None
STARTUP_WARNING_S = 60.0


class RayNotInstalledError(ImportError):
    """A distributed run was asked for, but Ray is not installed."""


class LearnerDiedError(RuntimeError):
    """The learner's process died (killed, out of memory, crashed): the run cannot go on."""


def link() -> Optional["Link"]:
    """This process's `Link` when it was started by `launch()`, else None (a single process)."""
    return _LINK


def _set_link(value: Optional["Link"]) -> None:
    global _LINK
    _LINK = value


@dataclasses.dataclass(frozen=True)
class Update:
    """What `Link.poll` returns: the blob's newest version (`value` None unless newer than the
    version asked about), its info, the run's counters and whether the run has finished."""

    version: int
    value: Any
    info: Dict[str, Any]
    counters: Dict[str, float]
    finished: bool


class _Transport:
    """How a Link reaches the hub and the object store."""

    def call(self, method: str, *args: Any) -> Any:
        raise NotImplementedError

    def put(self, value: Any) -> Any:
        raise NotImplementedError

    def get(self, ref: Any) -> Any:
        raise NotImplementedError


class _RayTransport(_Transport):
    def __init__(self, hub: Any) -> None:
        import ray

        self._ray, self._hub = ray, hub

    def call(self, method: str, *args: Any) -> Any:
        return self._ray.get(getattr(self._hub, method).remote(*args))

    def put(self, value: Any) -> Any:
        return [self._ray.put(value)]  # boxed: Ray passes a nested ref on without resolving it

    def get(self, ref: Any) -> Any:
        return self._ray.get(ref[0])


class _LoopTransport(_Transport):
    """A hub on an event-loop thread of this process."""

    def __init__(self, hub: Hub, loop: asyncio.AbstractEventLoop) -> None:
        self._hub, self._loop = hub, loop

    def call(self, method: str, *args: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(getattr(self._hub, method)(*args), self._loop).result()

    def put(self, value: Any) -> Any:
        return value

    def get(self, ref: Any) -> Any:
        return ref


class Link:
    """A process's handle on the run: its role and the hub's queues, blobs, counters and flag.

    Every method is one round trip to the hub (about 1 ms on Ray): batch small messages.
    """

    def __init__(self, transport: _Transport, role: "Role | str", index: int = 0, attempt: int = 0,
                 collectors: int = 0, evaluator: bool = False) -> None:
        self._t = transport
        self.role = Role.parse(role)
        self.index = index
        """Which collector this is (0 .. collectors-1); 0 for the learner and the evaluator."""
        self.attempt = attempt
        """0 for a process's first start, k after Ray restarted it k times."""
        self.collectors = collectors
        self.evaluator = evaluator
        """Whether the run has an evaluator process (else the learner serves EVALUATOR too)."""

    @property
    def roles(self) -> FrozenSet[Role]:
        """The roles this process serves (the learner also evaluates when there is no evaluator)."""
        if self.role is Role.LEARNER and not self.evaluator:
            return frozenset({Role.LEARNER, Role.EVALUATOR})
        return frozenset({self.role})

    @property
    def name(self) -> str:
        return f"collector {self.index}" if self.role is Role.COLLECTOR else self.role.value

    def push(self, queue: str, items: Sequence[Any], counters: Optional[Mapping[str, float]] = None,
             bound: Optional[int] = None, timeout: Optional[float] = None) -> bool:
        """Queue `items` and add `counters`, waiting while the queue is full (see `Hub.push`)."""
        return self._t.call("push", queue, list(items), dict(counters or {}), bound, timeout)

    def pop(self, queue: str, max_items: Optional[int] = None,
            timeout: Optional[float] = 0.0) -> List[Any]:
        """Take up to `max_items` items, waiting up to `timeout` s (None: until one comes or
        the run finishes) when the queue is empty."""
        return self._t.call("pop", queue, max_items, timeout)

    def publish(self, name: str, value: Any, info: Optional[Mapping[str, Any]] = None) -> int:
        """Put `value` in the object store once and make it the newest version of `name`."""
        return self._t.call("publish", name, self._t.put(value), dict(info or {}))

    def poll(self, name: str, have: int = 0, timeout: Optional[float] = 0.0) -> Update:
        """Blob `name` if a version newer than `have` exists (waiting up to `timeout`, None: until
        one does or the run finishes), plus counters and the finish flag, in one round trip."""
        reply = self._t.call("poll", name, have, timeout)
        value = reply["value"]
        return Update(reply["version"], None if value is None else self._t.get(value),
                      reply["info"], reply["counters"], reply["finished"])

    def add(self, counters: Mapping[str, float]) -> Dict[str, float]:
        return self._t.call("add", dict(counters))

    def finish(self) -> None:
        """End the run everywhere: every process sees `finished` and stops."""
        self._t.call("finish")

    def state(self) -> Dict[str, Any]:
        """Counters, finish flag, blob versions, queue lengths and `restarts` (see `Hub.state`)."""
        return self._t.call("state")

    @property
    def finished(self) -> bool:
        return bool(self.state()["finished"])

    def __repr__(self) -> str:
        return f"<Link {self.name} (attempt {self.attempt})>"


def local_links(collectors: int = 1, evaluator: bool = False,
                queue_size: int = 16) -> Tuple["Link", List["Link"], Optional["Link"], Callable[[], None]]:
    """In-process links to one hub on an event-loop thread (tests and examples: each link acts
    as one process of a run). Returns (learner, collectors, evaluator or None, close)."""
    hub = Hub(queue_size)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="rlpipe-local-hub", daemon=True)
    thread.start()
    transport = _LoopTransport(hub, loop)
    make = lambda role, i=0: Link(transport, role, i, 0, collectors, evaluator)  # noqa: E731

    def close() -> None:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()

    return (make(Role.LEARNER), [make(Role.COLLECTOR, i) for i in range(collectors)],
            make(Role.EVALUATOR) if evaluator else None, close)


# ---- Ray -------------------------------------------------------------------------------------

def _import_ray() -> Any:
    try:
        import ray
    except ImportError as err:
        raise RayNotInstalledError(
            f"a distributed run (collectors > 0) needs Ray, which is not installed; install it "
            f"with: {INSTALL_HINT}") from err
    return ray


def require_ray() -> None:
    """Raise `RayNotInstalledError` (naming the pip command) when Ray is not installed."""
    if importlib.util.find_spec("ray") is None:
        raise RayNotInstalledError(
            f"a distributed run (collectors > 0) needs Ray, which is not installed; install it "
            f"with: {INSTALL_HINT}")


def _driver_node(ray: Any) -> Dict[str, Any]:
    """Actor options that place the learner on the driver's machine (its run folder is there)."""
    try:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        node_id = ray.get_runtime_context().get_node_id()
    except Exception as err:  # e.g. a Ray Client driver, which is no node of the cluster
        log.debug("the learner is placed anywhere: %r", err)
        return {}
    return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)}


class _Process:
    """The body of every actor: add the role to the global task, set `link()`, run main()."""

    def __init__(self, role: str, index: int, collectors: int, evaluator: bool) -> None:
        self._args = (role, index, collectors, evaluator)

    def ping(self) -> int:
        return os.getpid()

    def run(self, hub: Any, main: Callable[..., Any], args: Sequence[Any],
            kwargs: Mapping[str, Any], attempt: int) -> Any:
        from . import task

        role, index, collectors, evaluator = self._args
        this = Link(_RayTransport(hub), role, index, attempt, collectors, evaluator)
        _set_link(this)
        for served in this.roles:
            task.add_role(served)
        try:
            return main(*args, **kwargs)
        finally:
            if this.role is Role.LEARNER:
                this.finish()  # the learner is done: stop everyone now, not at the driver's next look


@dataclasses.dataclass
class _Member:
    name: str
    role: Role
    actor: Any
    future: Any = None
    attempt: int = 0
    restarting: bool = False


def _ray_up(ray: Any, address: Optional[str], init_options: Optional[Mapping[str, Any]]) -> bool:
    """Connect to Ray (start a local one without `address`); True when this call did it."""
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    options: Dict[str, Any] = dict(include_dashboard=False, configure_logging=False)
    if address:
        options["address"] = address
    else:
        # Ray runs its workers at nice 15 by default: here they are the run, not background work
        options.update(num_cpus=os.cpu_count() or 1, _system_config={"worker_niceness": 0})
    options.update(init_options or {})
    ray.init(**options)
    return True


def launch(main: Callable[..., Any], collectors: int = 1, evaluator: bool = False,
           address: Optional[str] = None, args: Sequence[Any] = (),
           kwargs: Optional[Mapping[str, Any]] = None, *, queue_size: Optional[int] = None,
           max_restarts: int = 10, num_cpus: Optional[float] = None,
           init_options: Optional[Mapping[str, Any]] = None, grace_s: float = 20.0,
           backend: str = "ray", start_method: Optional[str] = None,
           child_nice: int = 0) -> Any:
    """Run `main(*args, **kwargs)` in a learner, `collectors` collectors and (with `evaluator`)
    an evaluator, each a Ray actor (`backend="ray"`) or, with `backend="local"`, the learner in
    this process and the others in child processes of this machine (no Ray needed; `address`,
    `num_cpus` and `init_options` do not apply; `start_method`: "fork" or "spawn";
    `child_nice`: how much lower the other processes' CPU priority is; see
    `rlpipe.engine._local`); return the learner's result.

    - Ray: an already initialised Ray is used as it is; else `address` ("auto", "HOST:6379", a
      cluster started with `ray start`) is connected to, or a local Ray is started with this
      machine's CPU count (no dashboard, no usage stats, actors at the driver's priority rather
      than Ray's default nice 15). `init_options` go to `ray.init`.
      What this call starts or connects, it shuts down or disconnects when it returns.
    - `queue_size`: the hub's queue bound (default: `collectors`, one batch per collector
      waiting, so the learner never starves and data is at most about one batch per
      collector older than the newest weights; producers wait while a queue is full).
    - Each actor asks `num_cpus` CPUs (default: 1, or an equal share of the cluster's CPUs
      when there are more actors than CPUs). The learner runs on the driver's machine (it writes the
      run folder there); collectors and the evaluator go wherever Ray places them. Roles: see
      `link()` and `Task.serves`.
    - A collector or evaluator whose process dies is restarted by Ray (up to `max_restarts`
      times each) and runs `main()` again; the restart is logged and counted in the hub
      (`link().state()["restarts"]`). An exception raised by `main()` in any actor ends the run
      and is raised here. If the learner's process dies, `LearnerDiedError` is raised.
    - When the learner's `main()` returns, every other actor is told to finish (`Link.finished`);
      actors still running `grace_s` seconds later are killed. Setting `task.finish = True` in
      this (the driver's) process, e.g. from a signal handler, asks the learner to finish its
      iteration and return. On KeyboardInterrupt every actor is killed at once.
    """
    if isinstance(collectors, bool) or not isinstance(collectors, int) or collectors < 1:
        raise ValueError(f"launch(collectors={collectors!r}): a distributed run needs an int >= 1 "
                         f"collectors (run main() directly for a single process)")
    if not callable(main):
        raise TypeError(f"launch(main=...) takes a callable, got {main!r}")
    if queue_size is None:
        queue_size = collectors
    if backend == "local":
        from ._local import launch_local

        return launch_local(main, collectors, evaluator, args, dict(kwargs or {}), queue_size,
                            max_restarts, grace_s, start_method, child_nice)
    if backend != "ray":
        raise ValueError(f"launch(backend={backend!r}): choose 'ray' (Ray actors, one machine "
                         f"or a cluster) or 'local' (child processes of this machine)")
    ray = _import_ray()
    from . import task as driver_task

    started = _ray_up(ray, address, init_options)
    members: List[_Member] = []
    hub = None
    interrupted = False
    try:
        n_actors = 1 + collectors + int(evaluator)
        if num_cpus is None:  # 1 each, or an equal share when the cluster has fewer CPUs
            num_cpus = min(1.0, ray.cluster_resources().get("CPU", 1.0) / n_actors)
        hub = ray.remote(Hub).options(num_cpus=0, max_concurrency=1000).remote(queue_size)
        layout = [(Role.LEARNER, 0, 0)] + [(Role.COLLECTOR, i, max_restarts) for i in range(collectors)]
        if evaluator:
            layout.append((Role.EVALUATOR, 0, max_restarts))
        for role, index, restarts in layout:
            cls = ray.remote(type(role.value.capitalize(), (_Process,), {}))
            placement = _driver_node(ray) if role is Role.LEARNER else {}
            actor = cls.options(num_cpus=num_cpus, max_restarts=restarts, max_task_retries=0,
                                **placement).remote(role.value, index, collectors, evaluator)
            name = f"collector {index}" if role is Role.COLLECTOR else role.value
            members.append(_Member(name, role, actor))
        call = (hub, main, tuple(args), dict(kwargs or {}))
        for m in members:
            m.future = m.actor.run.remote(*call, 0)
        driver_task.finish = False  # a finish left over from an earlier run is no request
        return _supervise(ray, hub, members, driver_task, max_restarts, call)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        _stop(ray, hub, members, 0.0 if interrupted else grace_s)
        if started:
            ray.shutdown()


def _supervise(ray: Any, hub: Any, members: List[_Member], driver_task: Any,
               max_restarts: int, call: Tuple[Any, ...]) -> Any:
    """Wait for the learner; restart dead collectors/evaluator; pass a driver finish request on.

    A dead member is pinged (the ping waits while Ray restarts its process) and, once it
    answers, runs `main()` again; if Ray gives up on it (`max_restarts`), it is gone."""
    learner = members[0]
    live = {m.future: m for m in members}
    asked_to_finish = False
    unstarted = {m.actor.ping.remote(): m for m in members}
    waited_since = time.monotonic()
    while True:
        ready, _ = ray.wait(list(live), num_returns=1, timeout=0.5)
        if unstarted:
            up, _ = ray.wait(list(unstarted), num_returns=len(unstarted), timeout=0)
            for ref in up:
                del unstarted[ref]
            if unstarted and time.monotonic() - waited_since > STARTUP_WARNING_S:
                log.warning("%s not started after %.0f s: the cluster may lack the CPUs they "
                            "ask for (see launch(num_cpus=...)); the run goes on without them",
                            ", ".join(m.name for m in unstarted.values()), STARTUP_WARNING_S)
                unstarted = {}
        if driver_task.finish and not asked_to_finish:
            asked_to_finish = True
            log.warning("finish requested: the learner ends its iteration, then every actor stops")
            ray.get(hub.finish.remote())
        for future in ready:
            member = live.pop(future)
            try:
                result = ray.get(future)
            except ray.exceptions.RayTaskError as err:  # main() raised: that is the run's error
                raise err.as_instanceof_cause() from None
            except ray.exceptions.RayActorError as err:
                if member is learner:
                    raise LearnerDiedError(f"the learner's process died, so the run stops: "
                                           f"{_first_line(err)}") from None
                if ray.get(hub.state.remote())["finished"]:
                    continue
                if member.restarting or member.attempt >= max_restarts:
                    log.error("%s died and is not restarted again (max_restarts=%d): %s",
                              member.name, max_restarts, _first_line(err))
                    if not any(m.role is Role.COLLECTOR for m in live.values()):
                        raise RuntimeError("every collector died and none can be restarted "
                                           f"(max_restarts={max_restarts}): the run stops") from None
                    continue
                member.attempt += 1
                total = ray.get(hub.note_restart.remote(member.name))
                log.warning("%s died (%s); Ray restarts it (its restart %d, %d in this run)",
                            member.name, _first_line(err), member.attempt, total)
                member.restarting = True  # answers once its new process is up
                member.future = member.actor.ping.options(max_task_retries=-1).remote()
                live[member.future] = member
                continue
            if member.restarting:
                member.restarting = False
                member.future = member.actor.run.remote(*call, member.attempt)
                live[member.future] = member
            elif member is learner:
                return result


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0][:300] if text else type(err).__name__


def _stop(ray: Any, hub: Any, members: List[_Member], grace_s: float) -> None:
    """Tell every actor to finish, give them `grace_s` seconds to return, then kill them all."""
    if hub is not None:
        try:
            ray.get(hub.finish.remote(), timeout=5)
        except Exception as err:  # the hub is gone: nothing to tell
            log.debug("could not reach the hub to finish the run: %r", err)
    running = [m.future for m in members if m.future is not None]
    if running and grace_s > 0:
        deadline = time.monotonic() + grace_s
        while running and time.monotonic() < deadline:
            done, running = ray.wait(running, num_returns=len(running),
                                     timeout=max(0.0, deadline - time.monotonic()))
            if not done:
                break
    for m in members:
        ray.kill(m.actor, no_restart=True)
    if hub is not None:
        ray.kill(hub, no_restart=True)
