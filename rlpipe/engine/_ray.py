"""The Ray launcher of a distributed run: each process of the run is a Ray actor.

`launch_ray` is what `rlpipe.engine.parallel.launch(backend="ray")` runs: it starts (or joins)
Ray, the hub actor and one actor per process, then supervises them (restarts dead collectors
and the evaluator, passes a driver's finish on, stops everyone at the end). Ray is imported only
inside functions: this module imports without it.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import logging
import os
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ._current import global_task
from ._hub import Hub
from ._link import Link, Transport, set_link
from ._roles import Role

log = logging.getLogger("rlpipe.engine.parallel")
STATUS = "status"
"""The blob whose info `launch(on_poll=...)` hands the driver (`Link.publish(STATUS, None, info)`)."""
INSTALL_HINT = 'pip install "rlpipe[ray]"'
STARTUP_WARNING_S = 60.0
LOST_AFTER_S = 10.0
"""A dead collector whose replacement process is not up this long after its death is counted
lost (`Hub.note_lost`): Ray has no room for it, typically because its node is gone. A killed
process is back within a few seconds; the count goes down again when it does come back."""


class RayNotInstalledError(ImportError):
    """A distributed run was asked for, but Ray is not installed."""


class LearnerDiedError(RuntimeError):
    """The learner's process died (killed, out of memory, crashed): the run cannot go on."""


class _RayTransport(Transport):
    def __init__(self, hub: Any) -> None:
        import ray

        self._ray, self._hub = ray, hub

    def call(self, method: str, *args: Any) -> Any:
        return self._ray.get(getattr(self._hub, method).remote(*args))

    def put(self, value: Any) -> Any:
        return [self._ray.put(value)]  # boxed: Ray passes a nested ref on without resolving it

    def get(self, ref: Any) -> Any:
        return self._ray.get(ref[0])



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
        task = global_task()
        role, index, collectors, evaluator = self._args
        this = Link(_RayTransport(hub), role, index, attempt, collectors, evaluator)
        set_link(this)
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
    died_at: Optional[float] = None  # when its last death was seen, while it is restarting
    lost: bool = False  # counted lost in the hub (restarting for longer than LOST_AFTER_S)


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


def _placements(collectors: int, evaluator: bool,
                resources: Optional[Mapping[str, str]]) -> Dict[str, Dict[str, Any]]:
    """Actor options that put the named processes ("collector 1", "evaluator") on the nodes
    holding a custom resource (`ray start --resources '{"NAME": 1}'`)."""
    names = [f"collector {i}" for i in range(collectors)] + (["evaluator"] if evaluator else [])
    placed: Dict[str, Dict[str, Any]] = {}
    for who, resource in (resources or {}).items():
        if who not in names:
            raise ValueError(f"launch(resources=...) (parallel.resources) places {who!r}, which "
                             f"is no process of this run; name one of {names}")
        if not isinstance(resource, str) or not resource:
            raise ValueError(f"launch(resources=...): {who!r} must map to the name of a custom "
                             f"resource (as in `ray start --resources`), got {resource!r}")
        placed[who] = {"resources": {resource: 0.001}}  # any node that has it, however little
    return placed


def launch_ray(main: Callable[..., Any], collectors: int, evaluator: bool,
               address: Optional[str], args: Sequence[Any], kwargs: Mapping[str, Any],
               queue_size: int, max_restarts: int, num_cpus: Optional[float],
               init_options: Optional[Mapping[str, Any]], grace_s: float,
               on_poll: Optional[Callable[[Dict[str, Any]], None]] = None,
               resources: Optional[Mapping[str, str]] = None) -> Any:
    """See `rlpipe.engine.parallel.launch(backend="ray")`."""
    ray = _import_ray()
    placed = _placements(collectors, evaluator, resources)
    driver_task = global_task()

    started = _ray_up(ray, address, init_options)
    members: List[_Member] = []
    hub = None
    interrupted = False
    try:
        n_actors = 1 + collectors + int(evaluator)
        if num_cpus is None:  # 1 each, or an equal share when the cluster has fewer CPUs
            num_cpus = min(1.0, ray.cluster_resources().get("CPU", 1.0) / n_actors)
        # the hub lives beside the learner: a node lost with it would end the run
        hub = ray.remote(Hub).options(num_cpus=0, max_concurrency=1000,
                                      **_driver_node(ray)).remote(queue_size)
        layout = [(Role.LEARNER, 0, 0)] + [(Role.COLLECTOR, i, max_restarts) for i in range(collectors)]
        if evaluator:
            layout.append((Role.EVALUATOR, 0, max_restarts))
        for role, index, restarts in layout:
            cls = ray.remote(type(role.value.capitalize(), (_Process,), {}))
            name = f"collector {index}" if role is Role.COLLECTOR else role.value
            placement = _driver_node(ray) if role is Role.LEARNER else placed.get(name, {})
            actor = cls.options(num_cpus=num_cpus, max_restarts=restarts, max_task_retries=0,
                                **placement).remote(role.value, index, collectors, evaluator)
            members.append(_Member(name, role, actor))
        call = (hub, main, tuple(args), dict(kwargs))
        # an actor runs its calls in order: a ping sent after run() would answer only at the end
        pings = {m.actor.ping.remote(): m for m in members}
        for m in members:
            m.future = m.actor.run.remote(*call, 0)
        driver_task.finish = False  # a finish left over from an earlier run is no request
        return _supervise(ray, hub, members, driver_task, max_restarts, call, on_poll, pings)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        _stop(ray, hub, members, 0.0 if interrupted else grace_s)
        if started:
            ray.shutdown()


def poll_state(ray: Any, hub: Any) -> Dict[str, Any]:
    """What `on_poll` gets, in one hub call: {"counters", "finished", "status" (the info of
    the newest `STATUS` blob, {} before the first), "status_version" (0 before the first)}."""
    reply = ray.get(hub.poll.remote(STATUS, 0, 0.0))
    return {"counters": reply["counters"], "finished": reply["finished"],
            "status": reply["info"], "status_version": reply["version"]}


def _supervise(ray: Any, hub: Any, members: List[_Member], driver_task: Any,
               max_restarts: int, call: Tuple[Any, ...],
               on_poll: Optional[Callable[[Dict[str, Any]], None]] = None,
               pings: Optional[Dict[Any, _Member]] = None) -> Any:
    """Wait for the learner; restart dead collectors/evaluator; pass a driver finish request on;
    call `on_poll(poll_state(...))` at every wake (every 0.5 s) and once more when the
    learner has returned, so that it sees the run's last status. `pings`: one ping per
    member, sent before its run(); a member whose ping has not answered `STARTUP_WARNING_S`
    after this call has not started (a warning names it).

    A dead member is pinged (the ping waits while Ray restarts its process) and, once it
    answers, runs `main()` again; if Ray gives up on it (`max_restarts`), it is gone. A
    collector not back `LOST_AFTER_S` after its death (no node has room for it: its node is
    gone) is counted lost in the hub, and back when its ping answers (a node joined); when
    every collector is lost or gone, the run is finished as on a driver's finish request."""
    learner = members[0]
    live = {m.future: m for m in members}
    asked_to_finish = False
    unstarted = dict(pings or {})
    waited_since = time.monotonic()
    while True:
        ready, _ = ray.wait(list(live), num_returns=1, timeout=0.5)
        if on_poll is not None:
            on_poll(poll_state(ray, hub))
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
            log.warning("finish requested (%s): the learner ends its iteration, then every actor "
                        "stops", driver_task.finish_reason or "task.finish set")
            ray.get(hub.finish.remote())
        for m in live.values():
            if (m.restarting and not m.lost and m.role is Role.COLLECTOR
                    and time.monotonic() - m.died_at > LOST_AFTER_S):
                m.lost = True
                ray.get(hub.note_lost.remote(m.name))
                log.debug("%s: no process %.0f s after its death (its node is gone?); counted "
                          "lost until Ray re-creates it", m.name, LOST_AFTER_S)
        collectors = [m for m in members if m.role is Role.COLLECTOR]
        if (not asked_to_finish and any(m.lost for m in collectors)
                and all(m.lost or m.future not in live for m in collectors)):
            asked_to_finish = True  # nothing would collect until a node joins: stop resumable
            log.warning("every collector is lost (%s): no node has room to re-create them; the "
                        "learner ends its iteration and writes its final checkpoint, then the run "
                        "stops (resume it when the nodes are back)",
                        ", ".join(m.name for m in collectors if m.lost))
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
                member.died_at = time.monotonic()
                member.future = member.actor.ping.options(max_task_retries=-1).remote()
                live[member.future] = member
                continue
            if member.restarting:
                member.restarting = False
                if member.lost:
                    member.lost = False
                    ray.get(hub.note_back.remote(member.name))
                    log.debug("%s runs again (Ray re-created it on a node that has room)",
                              member.name)
                member.future = member.actor.run.remote(*call, member.attempt)
                live[member.future] = member
            elif member is learner:
                if on_poll is not None:  # what the learner reported after the look above
                    on_poll(poll_state(ray, hub))
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
