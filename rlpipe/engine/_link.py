"""A process's handle on a distributed run: `Link`, the transports it talks through, `link()`.

Both launchers (`_ray.py`, `_local.py`) build a `Link` over their own transport (a Ray actor
call, a pipe to the learner, or an event loop of this process) and make it this process's
`link()`; the public face is `rlpipe.engine.parallel`. Nothing here imports Ray.
"""
from __future__ import annotations

import asyncio
import dataclasses
import threading
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from ._hub import Hub
from ._roles import Role, set_launched_roles

__all__ = ["Link", "LoopTransport", "Transport", "Update", "link", "local_links", "set_link"]

_LINK: Optional["Link"] = None


def link() -> Optional["Link"]:
    """This process's `Link` when it was started by `launch()`, else None (a single process)."""
    return _LINK


def set_link(value: Optional["Link"]) -> None:
    """Make `value` this process's `link()` (the launchers call it; None: a single process)."""
    global _LINK
    _LINK = value
    set_launched_roles(None if value is None else value.name,
                       () if value is None else value.roles)


@dataclasses.dataclass(frozen=True)
class Update:
    """What `Link.poll` returns: the blob's newest version (`value` None unless newer than the
    version asked about), its info, the run's counters and whether the run has finished."""

    version: int
    value: Any
    info: Dict[str, Any]
    counters: Dict[str, float]
    finished: bool


class Transport:
    """How a Link reaches the hub and the object store."""

    def call(self, method: str, *args: Any) -> Any:
        """Run hub method `method(*args)` and return its reply."""
        raise NotImplementedError(f"{type(self).__name__} must implement Transport.call")

    def put(self, value: Any) -> Any:
        """Store `value` where other processes can fetch it; return the reference to pass on."""
        raise NotImplementedError(f"{type(self).__name__} must implement Transport.put")

    def get(self, ref: Any) -> Any:
        """The value behind a reference made by `put`."""
        raise NotImplementedError(f"{type(self).__name__} must implement Transport.get")


class LoopTransport(Transport):
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

    def __init__(self, transport: Transport, role: "Role | str", index: int = 0, attempt: int = 0,
                 collectors: int = 0, evaluator: bool = False,
                 member: Optional[str] = None) -> None:
        self._t = transport
        self.member = member
        """The name a collector of a served hub joined with (`Hub.join`); None otherwise."""
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
        if self.member is not None:
            return self.member
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
    transport = LoopTransport(hub, loop)
    make = lambda role, i=0: Link(transport, role, i, 0, collectors, evaluator)  # noqa: E731

    def close() -> None:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()

    return (make(Role.LEARNER), [make(Role.COLLECTOR, i) for i in range(collectors)],
            make(Role.EVALUATOR) if evaluator else None, close)
