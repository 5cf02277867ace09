"""The learner's count of who collects: env steps from each collector, live and lost ones.

`WorkerCounts.update(messages, version)` (called by the exchange's `ReceiveTrajectories` with
the collector batches of an iteration and the newest weight version) returns the metrics it
logs: `parallel/weights_lag` (mean versions the batches' weights were behind),
`collect/samples_from/<worker>`
(env steps received from that collector so far), `collect/workers` (collectors there now) and
`collect/lost_workers` (collectors whose node or process died: members of a served hub whose
beats stopped, or collectors of a Ray run that the launcher found dead with no replacement
process in sight, e.g. their node is gone). It asks the hub at most once per `every_s` seconds,
logs one info line at a collector's first samples, one warning line each time collectors are
lost and one info line when lost collectors run again (Ray re-created them on a node that
joined).
"""
from __future__ import annotations

import logging
import time
from typing import Any, Dict, List, Mapping, Sequence

log = logging.getLogger("rlpipe.middleware.exchange")


class WorkerCounts:
    """Per-collector env steps and the hub's live and lost members, as metrics."""

    def __init__(self, link: Any, every_s: float = 1.0) -> None:
        self.link = link
        self.every_s = every_s
        self.samples: Dict[str, int] = {}
        self.workers = int(link.collectors)
        self.lost = 0
        self.away: List[str] = []
        self._next_look = 0.0

    def update(self, messages: Sequence[Mapping[str, Any]], version: int) -> Dict[str, float]:
        for m in messages:
            source = str(m.get("source", "?")).replace(" ", "_")
            if source not in self.samples:
                log.info("first samples from collector %s", source)
            self.samples[source] = self.samples.get(source, 0) + int(m["env_step"])
        now = time.monotonic()
        if now >= self._next_look:
            self._next_look = now + self.every_s
            self._look()
        metrics: Dict[str, float] = {"collect/workers": float(self.workers),
                                     "collect/lost_workers": float(self.lost)}
        for source, steps in self.samples.items():
            metrics[f"collect/samples_from/{source}"] = float(steps)
        if messages:
            metrics["parallel/weights_lag"] = sum(version - m["version"] for m in messages) / len(messages)
        return metrics

    def _look(self) -> None:
        state = self.link.state()
        lost = list(state.get("lost", []))
        away = list(state.get("away", []))
        served = bool(state.get("joined"))  # a served hub: its collectors join and leave at will
        self.workers = (len(state.get("members", [])) if served
                        else int(self.link.collectors) - len(away))
        if len(lost) > self.lost:
            why = ("no beat for a while, their node or process died" if served else
                   "dead, and Ray has not re-created them (their node is gone?)")
            log.warning("lost %d collector(s) (%s): %s; training goes on with %d",
                        len(lost) - self.lost, ", ".join(lost[self.lost:]), why, self.workers)
        back = [who for who in self.away if who not in away]
        if back:
            log.info("collector(s) back: %s (Ray re-created them); training goes on with %d",
                     ", ".join(back), self.workers)
        self.lost, self.away = len(lost), away
