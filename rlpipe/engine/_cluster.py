"""A served hub on a Ray cluster: TMRL's server, trainer and rollout workers over rlpipe's hub.

`serve_hub` starts the run's `Hub` as a named, detached Ray actor (it outlives the command that
started it); `trainer_link` makes this process the learner of that hub and publishes what the
workers must run (blob `RUN`: the arguments of their `main`); `run_workers` starts N collector
actors on this machine's node (or on nodes holding a custom resource), each of which joins the
hub under its own name, beats every `BEAT_S` seconds while it runs `main(*args)` and leaves when
it returns. Workers may join and leave at any time; one whose beats stop (its node died) is
counted lost by the hub. Ray is imported only inside functions.
"""
from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

from ._current import global_task
from ._hub import Hub
from ._link import Link, set_link
from ._ray import _import_ray, _RayTransport
from ._roles import Role

log = logging.getLogger("rlpipe.engine.cluster")
NAMESPACE = "rlpipe"
RUN = "run"
"""The blob the trainer publishes for the workers: info {"args": [...]} of their main."""
BEAT_S = 1.0
TRAINER_DONE = "trainer_done"
"""Hub counter the trainer adds to when it let go of the hub (`stop_hub` waits for it)."""
TRAINER_GRACE_S = 30.0
WORKER_GRACE_S = 10.0


class HubNotFoundError(ValueError):
    """No hub of that name is served on the cluster."""


def connect(address: Optional[str]) -> Any:
    """Connect this process to the Ray cluster at `address` ("auto": the one started on this
    machine with `ray start`); returns the `ray` module."""
    ray = _import_ray()
    if not ray.is_initialized():
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        ray.init(address=address or "auto", namespace=NAMESPACE, include_dashboard=False,
                 configure_logging=False, log_to_driver=True)
    return ray


def hub_handle(ray: Any, name: str, address: Optional[str]) -> Any:
    """The served hub `name`, or `HubNotFoundError` naming the command that serves it."""
    try:
        return ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        raise HubNotFoundError(
            f"no hub named {name!r} is served on the Ray cluster at {address or 'auto'}: start "
            f"it on the head node with `rlpipe serve {name} --address {address or 'auto'}`") from None


def serve_hub(name: str, address: Optional[str], queue_size: int = 4,
              lost_after_s: float = 5.0) -> Dict[str, Any]:
    """Start hub `name` as a detached actor on this node; returns its state. Refused when one
    of that name is served already."""
    ray = connect(address)
    try:
        ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        pass
    else:
        raise ValueError(f"a hub named {name!r} is served already on {address or 'auto'}: stop "
                         f"it first with `rlpipe serve {name} --address {address or 'auto'} "
                         f"--stop`, or choose another name")
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = ray.get_runtime_context().get_node_id()
    hub = ray.remote(Hub).options(
        name=name, namespace=NAMESPACE, lifetime="detached", num_cpus=0, max_concurrency=1000,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False),
    ).remote(queue_size, lost_after_s)
    return ray.get(hub.state.remote())


def stop_hub(name: str, address: Optional[str]) -> Dict[str, Any]:
    """Finish the run of hub `name` (its trainer and workers stop) and end the actor; returns
    its last state."""
    ray = connect(address)
    hub = hub_handle(ray, name, address)
    ray.get(hub.finish.remote())
    state = ray.get(hub.state.remote())
    deadline = time.monotonic() + TRAINER_GRACE_S
    while (state["versions"].get(RUN) and not state["counters"].get(TRAINER_DONE)
           and time.monotonic() < deadline):  # let the trainer end its run with the hub there
        time.sleep(0.2)
        state = ray.get(hub.state.remote())
    ray.kill(hub, no_restart=True)
    return state


@contextlib.contextmanager
def trainer_link(name: str, address: Optional[str], args: Sequence[Any]) -> Iterator[Link]:
    """Make this process the learner of hub `name` while the block runs: its `link()`, the
    global task's roles (learner and evaluator), and the workers' `main` arguments published
    as blob `RUN`. At the end the run is finished everywhere (the workers stop) and this
    process disconnects. Refused when the hub has had a trainer (a hub carries one training)."""
    started = not _import_ray().is_initialized()
    ray = connect(address)
    task = global_task()
    roles_before = set(task._roles)
    learner: Optional[Link] = None
    try:
        hub = hub_handle(ray, name, address)
        state = ray.get(hub.state.remote())
        if state["finished"] or state["versions"].get(RUN):
            raise ValueError(f"hub {name!r} already carries a training (finished: "
                             f"{state['finished']}); serve a fresh one: `rlpipe serve {name} "
                             f"--stop`, then `rlpipe serve {name}`")
        learner = Link(_RayTransport(hub), Role.LEARNER, 0, 0, 0, False)
        learner.publish(RUN, None, {"args": list(args)})
        set_link(learner)
        for served in learner.roles:
            task.add_role(served)
        yield learner
    finally:
        set_link(None)
        task._roles = roles_before
        if learner is not None:
            try:
                learner.add({TRAINER_DONE: 1})
                learner.finish()
            except Exception as err:  # the hub is gone (stopped): the workers stop with it
                log.warning("could not tell hub %r that the training ended: %r", name, err)
        if started:
            ray.shutdown()


class _Collector:
    """The body of a worker's collector actor: join, beat, run main, leave."""

    def run(self, hub: Any, member: str, main: Callable[..., Any], args: Sequence[Any]) -> str:
        import ray

        index = ray.get(hub.join.remote(member))
        collector = Link(_RayTransport(hub), Role.COLLECTOR, index, 0, 0, False, member=member)
        set_link(collector)
        global_task().add_role(Role.COLLECTOR)
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(BEAT_S):
                if not ray.get(hub.beat.remote(member)):
                    log.warning("%s was counted lost by the hub (no beat for too long); its "
                                "samples still count", member)

        beater = threading.Thread(target=beat, name=f"rlpipe-beat-{member}", daemon=True)
        beater.start()
        try:
            main(*args)
        finally:
            stop.set()
            ray.get(hub.leave.remote(member))
        return member


def default_worker_id() -> str:
    """`<host>-<pid>`: unique among the workers of a run."""
    return f"{socket.gethostname()}-{os.getpid()}"


def run_workers(name: str, address: Optional[str], n: int, main: Callable[..., Any],
                worker_id: Optional[str] = None, num_cpus: float = 1.0,
                resource: Optional[str] = None, wait_s: Optional[float] = None) -> Dict[str, List[str]]:
    """Add `n` collectors to the training of hub `name` and wait until they end; returns
    {"ended": members that returned, "lost": members whose actor or node died}.

    They run `main(*args)` with the args the trainer published (waiting up to `wait_s`, None:
    until a trainer attaches). Placed on this process's node, or with `resource` on nodes
    that hold that custom resource (`ray start --resources '{"NAME": 1}'`)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"rlpipe worker --n must be a whole number >= 1, got {n!r}")
    ray = connect(address)
    hub = hub_handle(ray, name, address)
    reply = ray.get(hub.poll.remote(RUN, 0, wait_s))
    if reply["finished"] or reply["version"] == 0:
        raise ValueError(f"hub {name!r} has no training to join (finished: {reply['finished']}"
                         f"): start one with `rlpipe trainer {name} --address ADDR ENTRY`")
    args = reply["info"]["args"]
    options: Dict[str, Any] = {"num_cpus": num_cpus, "max_restarts": 0, "max_task_retries": 0}
    if resource:
        options["resources"] = {resource: 0.001}
    else:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(
            node_id=ray.get_runtime_context().get_node_id(), soft=False)
    worker_id = worker_id or default_worker_id()
    members = [f"{worker_id}-{i}" for i in range(n)]
    cls = ray.remote(_Collector).options(**options)
    actors = [cls.remote() for _ in members]
    futures = {a.run.remote(hub, m, main, args): (m, a) for a, m in zip(actors, members)}
    return _wait_workers(ray, hub, futures)


def _wait_workers(ray: Any, hub: Any, futures: Dict[Any, Any]) -> Dict[str, List[str]]:
    """Wait for the collectors; those not done `WORKER_GRACE_S` after the training finished
    (e.g. never placed: no free CPU) or after the hub went away are killed."""
    ended: List[str] = []
    lost: List[str] = []
    pending = dict(futures)
    deadline: Optional[float] = None
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
        for future in done:
            member = pending.pop(future)[0]
            try:
                ended.append(ray.get(future))
            except (ray.exceptions.RayActorError, ray.exceptions.NodeDiedError) as err:
                log.warning("collector %s is gone (%s): the training goes on without it",
                            member, type(err).__name__)
                lost.append(member)
        if pending and deadline is None:
            try:
                finished = ray.get(hub.state.remote())["finished"]
            except ray.exceptions.RayActorError:  # the hub was stopped
                finished = True
            if finished:
                deadline = time.monotonic() + WORKER_GRACE_S
        if pending and deadline is not None and time.monotonic() > deadline:
            log.warning("collector(s) %s still running %.0f s after the training ended (never "
                        "placed? see --num-cpus): stopped", ", ".join(m for m, _ in pending.values()),
                        WORKER_GRACE_S)
            for _, actor in pending.values():
                ray.kill(actor, no_restart=True)
            break
    return {"ended": ended, "lost": lost}
