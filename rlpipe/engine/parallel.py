"""One script, many processes: `launch(main, collectors=N)` runs `main()` in Ray actors with roles.

Each actor runs the same `main()`; before it starts, the global `task` gets the actor's role
(learner, collector or evaluator), so middleware of other roles become no-ops (`Task.use`), and
`link()` returns the actor's `Link` to the run's `Hub` (named queues, versioned blobs, counters,
the finish flag). In a single process `link()` is None. Ray is imported only inside `launch`:
this module imports without it.

This is the public face; the parts live below it: `_link.py` (Link, transports, `link()`),
`_ray.py` (the Ray launcher), `_local.py` (child processes of this machine), `_hub.py`,
`_cluster.py` (a hub served on a Ray cluster: `rlpipe serve / trainer / worker`).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional, Sequence

from ._cluster import HubNotFoundError, run_workers, serve_hub, stop_hub, trainer_link
from ._hub import Hub
from ._link import Link, Update, link, local_links
from ._local import ProcessFailedError, launch_local
from ._ray import STATUS, LearnerDiedError, RayNotInstalledError, launch_ray, require_ray

__all__ = ["STATUS", "Hub", "HubNotFoundError", "LearnerDiedError", "Link", "ProcessFailedError",
           "RayNotInstalledError", "Update", "launch", "link", "local_links", "require_ray",
           "run_workers", "serve_hub", "stop_hub", "trainer_link"]


def launch(main: Callable[..., Any], collectors: int = 1, evaluator: bool = False,
           address: Optional[str] = None, args: Sequence[Any] = (),
           kwargs: Optional[Mapping[str, Any]] = None, *, queue_size: Optional[int] = None,
           max_restarts: int = 10, num_cpus: Optional[float] = None,
           init_options: Optional[Mapping[str, Any]] = None, grace_s: float = 20.0,
           backend: str = "ray", start_method: Optional[str] = None,
           child_nice: int = 0,
           on_poll: Optional[Callable[[Dict[str, Any]], None]] = None,
           resources: Optional[Mapping[str, str]] = None) -> Any:
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
      collector older than the newest weights; producers wait while a queue is full; 1
      without collectors).
    - `collectors=0` with `evaluator=True`: a learner that takes no env steps (an offline run)
      and an evaluator process that evaluates the weights it publishes.
    - Each actor asks `num_cpus` CPUs (default: 1, or an equal share of the cluster's CPUs
      when there are more actors than CPUs). The learner runs on the driver's machine (it writes the
      run folder there); collectors and the evaluator go wherever Ray places them. Roles: see
      `link()` and `Task.serves`.
    - `resources` (Ray only) places processes by name ("collector 1", "evaluator") on the
      nodes that hold a custom resource: {"collector 1": "worker_node"} puts collector 1 on
      a node started with `ray start --resources '{"worker_node": 1}'` (and re-creates it
      only on such a node). The hub runs on the driver's node, beside the learner.
    - A collector or evaluator whose process dies is restarted by Ray (up to `max_restarts`
      times each) and runs `main()` again; the restart is logged and counted in the hub
      (`link().state()["restarts"]`). A collector with no new process 10 s after its death
      (its node is gone and no other node has room for it) is counted lost in the hub
      (`state()["lost"]`, `["away"]`) until Ray re-creates it, e.g. when a node joins. An exception raised by `main()` in any actor ends the run
      and is raised here. If the learner's process dies, `LearnerDiedError` is raised.
    - When the learner's `main()` returns, every other actor is told to finish (`Link.finished`);
      actors still running `grace_s` seconds later are killed. Setting `task.finish = True` in
      this (the driver's) process, e.g. from a signal handler, asks the learner to finish its
      iteration and return. On KeyboardInterrupt every actor is killed at once.
    - `on_poll(state)` (Ray only: with the local backend the learner runs in this process and
      can show its progress itself) is called in this process every 0.5 s while the run goes
      on, and once after the learner returned, with the hub's `state`: {"counters",
      "finished", "status", "status_version"}, where "status" is the info of the newest blob
      `STATUS` (a small dict a process publishes with `link().publish(STATUS, None, info)`;
      {} before the first). One hub call per look; an exception it raises ends the run.
    """
    if isinstance(collectors, bool) or not isinstance(collectors, int) or collectors < 0 or (
            collectors == 0 and not evaluator):
        raise ValueError(f"launch(collectors={collectors!r}, evaluator={evaluator!r}): a "
                         f"distributed run needs an int >= 1 collectors, or 0 collectors and "
                         f"evaluator=True (a learner without env steps, e.g. offline, beside an "
                         f"evaluator process); run main() directly for a single process")
    if not callable(main):
        raise TypeError(f"launch(main=...) takes a callable, got {main!r}")
    if queue_size is None:
        queue_size = max(collectors, 1)
    if backend == "local":
        if resources:
            raise ValueError("launch(resources=...) (parallel.resources) places Ray actors on "
                             "cluster nodes; backend='local' runs every process on this "
                             "machine: drop it")
        if on_poll is not None:
            raise ValueError("launch(on_poll=...) works with backend='ray'; with backend='local' "
                             "the learner runs in this process: show its progress there")
        return launch_local(main, collectors, evaluator, args, dict(kwargs or {}), queue_size,
                            max_restarts, grace_s, start_method, child_nice)
    if backend != "ray":
        raise ValueError(f"launch(backend={backend!r}): choose 'ray' (Ray actors, one machine "
                         f"or a cluster) or 'local' (child processes of this machine)")
    return launch_ray(main, collectors, evaluator, address, args, dict(kwargs or {}), queue_size,
                      max_restarts, num_cpus, init_options, grace_s, on_poll, resources)
