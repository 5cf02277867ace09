"""The hub of a distributed run: the one place its processes meet (no Ray import here).

`Hub` holds bounded named queues, versioned blobs, counters, the run-wide finish flag, the
restart count and the members that joined (`rlpipe worker` collectors of a served hub, which
beat every second; one silent for `lost_after_s` is counted lost). A launcher that supervises
its processes itself reports the ones it lost (`note_lost`: dead, and no replacement in sight)
and those that came back (`note_back`). Its methods are coroutines: `rlpipe.engine.parallel` runs it as an async Ray
actor (one event loop, so every method is atomic and waits never block other callers);
`local_links` runs it on an event loop thread in this process (tests, examples).
"""
from __future__ import annotations

import asyncio
import collections
from typing import Any, Callable, Deque, Dict, List, Mapping, Optional, Sequence, Tuple


class Hub:
    """Bounded named queues, versioned blobs, counters and flags shared by a run's processes.

    `queue_size` is the default bound of a queue (in items): `push` waits while the queue is
    full, so producers slow down to the pace of the consumer instead of filling memory.
    Every wait ends as soon as `finish()` is called.
    """

    def __init__(self, queue_size: int = 16, lost_after_s: float = 5.0) -> None:
        if not isinstance(queue_size, int) or queue_size < 1:
            raise ValueError(f"queue_size must be an int >= 1, got {queue_size!r}")
        if not lost_after_s > 0:
            raise ValueError(f"lost_after_s must be > 0 seconds, got {lost_after_s!r}")
        self._lost_after_s = float(lost_after_s)
        self._members: Dict[str, float] = {}  # member -> hub time of its last beat
        self._lost: List[str] = []
        self._away: List[str] = []  # lost and not back (yet)
        self._joined = 0
        self._queue_size = queue_size
        self._queues: Dict[str, Deque[Any]] = {}
        self._blobs: Dict[str, Tuple[int, Any, Dict[str, Any]]] = {}
        self._counters: Dict[str, float] = {}
        self._finished = False
        self._restarts: Dict[str, int] = {}
        self._cond: Optional[asyncio.Condition] = None

    def _changed(self) -> asyncio.Condition:
        if self._cond is None:  # made inside the running loop
            self._cond = asyncio.Condition()
        return self._cond

    async def _wait(self, ready: Callable[[], bool], timeout: Optional[float]) -> bool:
        """Wait (holding the condition) until `ready()`, `finish()` or `timeout` (None: no limit)."""
        cond = self._changed()
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while not (ready() or self._finished):
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                break
            try:
                await asyncio.wait_for(cond.wait(), remaining)
            except asyncio.TimeoutError:
                break
        return ready()

    def _queue(self, name: str) -> Deque[Any]:
        queue = self._queues.get(name)
        if queue is None:
            queue = self._queues[name] = collections.deque()
        return queue

    def _add(self, counters: Optional[Mapping[str, float]]) -> None:
        for key, value in (counters or {}).items():
            self._counters[key] = self._counters.get(key, 0) + value

    async def push(self, queue: str, items: Sequence[Any],
                   counters: Optional[Mapping[str, float]] = None,
                   bound: Optional[int] = None, timeout: Optional[float] = None) -> bool:
        """Append `items` to `queue` once it holds fewer than `bound` items (default: the hub's
        queue_size) and add `counters` in the same step. False when the run finished (or the
        wait timed out) first: nothing was queued or counted."""
        limit = bound or self._queue_size
        q = self._queue(queue)
        async with self._changed():
            if not await self._wait(lambda: len(q) < limit, timeout) or self._finished:
                return False
            q.extend(items)
            self._add(counters)
            self._changed().notify_all()
            return True

    async def pop(self, queue: str, max_items: Optional[int] = None,
                  timeout: Optional[float] = 0.0) -> List[Any]:
        """Take up to `max_items` (None: all) items from `queue`, waiting up to `timeout` seconds
        (None: until one arrives) when it is empty. Empty once the run has finished."""
        q = self._queue(queue)
        async with self._changed():
            await self._wait(lambda: len(q) > 0, timeout)
            if self._finished:
                return []
            n = len(q) if max_items is None else min(max_items, len(q))
            items = [q.popleft() for _ in range(n)]
            if items:
                self._changed().notify_all()  # room for waiting producers
            return items

    async def publish(self, name: str, value: Any, info: Optional[Mapping[str, Any]] = None) -> int:
        """Make `value` the newest version of blob `name` (the previous one is dropped);
        returns its version (1, 2, ...)."""
        async with self._changed():
            version = self._blobs.get(name, (0, None, {}))[0] + 1
            self._blobs[name] = (version, value, dict(info or {}))
            self._changed().notify_all()
            return version

    async def poll(self, name: str, have: int = 0, timeout: Optional[float] = 0.0) -> Dict[str, Any]:
        """The newest version of blob `name` when it is newer than `have` (waiting up to
        `timeout`, None: until there is one), with the counters and the finish flag:
        {"version", "value" (None when not newer), "info", "counters", "finished"}."""
        async with self._changed():
            await self._wait(lambda: self._blobs.get(name, (0,))[0] > have, timeout)
            version, value, info = self._blobs.get(name, (0, None, {}))
            newer = version > have
            return {"version": version, "value": value if newer else None,
                    "info": dict(info) if newer else {}, "counters": dict(self._counters),
                    "finished": self._finished}

    async def add(self, counters: Mapping[str, float]) -> Dict[str, float]:
        """Add to the counters; returns all of them."""
        async with self._changed():
            self._add(counters)
            return dict(self._counters)

    async def finish(self) -> None:
        """End the run: every wait returns, pushes are refused, pops come back empty."""
        async with self._changed():
            self._finished = True
            self._changed().notify_all()

    async def note_restart(self, who: str) -> int:
        """Count a restart of process `who` (e.g. "collector 1"); returns the total."""
        self._restarts[who] = self._restarts.get(who, 0) + 1
        return sum(self._restarts.values())

    async def note_lost(self, who: str) -> int:
        """Count process `who` lost until `note_back(who)`; returns how many were lost so far."""
        self._lost.append(who)
        self._away.append(who)
        return len(self._lost)

    async def note_back(self, who: str) -> None:
        """Process `who`, counted lost, runs again."""
        if who in self._away:
            self._away.remove(who)

    async def join(self, member: str) -> int:
        """Add `member` (a collector started by a worker) to the run; returns its index
        (0, 1, ... in the order they joined: its seed). A name already live is refused."""
        self._sweep()
        if member in self._members:
            raise ValueError(f"a member named {member!r} is already in this run: give each "
                             f"worker its own id (rlpipe worker --id)")
        self._members[member] = asyncio.get_running_loop().time()
        self._joined += 1
        return self._joined - 1

    async def beat(self, member: str) -> bool:
        """`member` is alive; False when it is not (or no longer) a member: it was counted lost."""
        if member not in self._members:
            return False
        self._members[member] = asyncio.get_running_loop().time()
        return True

    async def leave(self, member: str) -> None:
        """`member` ends cleanly (not counted lost)."""
        self._members.pop(member, None)

    def _sweep(self) -> None:
        """Count the members silent for `lost_after_s` as lost."""
        if not self._members:
            return
        now = asyncio.get_running_loop().time()
        for member, seen in list(self._members.items()):
            if now - seen > self._lost_after_s:
                del self._members[member]
                self._lost.append(member)
                self._away.append(member)

    async def state(self) -> Dict[str, Any]:
        """Counters, finish flag, blob versions, queue lengths, restarts (total and by process),
        live `members`, `lost` members (in the order they were found silent or reported lost),
        `away` (those of `lost` not back) and `joined`."""
        self._sweep()
        return {"counters": dict(self._counters), "finished": self._finished,
                "versions": {k: v[0] for k, v in self._blobs.items()},
                "queues": {k: len(q) for k, q in self._queues.items()},
                "restarts": sum(self._restarts.values()), "restarted": dict(self._restarts),
                "members": sorted(self._members), "lost": list(self._lost),
                "away": list(self._away),
                "joined": self._joined}
