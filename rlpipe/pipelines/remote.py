"""TMRL's shape on a Ray cluster: a served hub, a trainer, rollout workers joining at will.

- `serve(name, address)` starts the hub as a named, detached actor on the head node;
- `rlpipe.training.train(entry, hub=name, ray_address=address)` (`rlpipe trainer`) runs the
  entry's learner (and evaluator) in this process, attached to that hub, through
  `rlpipe.pipelines.distributed.run_trainer`;
- `worker(name, address, n)` (`rlpipe worker`) adds n collectors of that training, on this
  machine's node; they run the same `role_main` as the collectors of `rlpipe train
  --collectors`, with the job and config the trainer published, so samples, compression, weight
  versions and the exchange middleware are those of any distributed run.

The learner logs `collect/workers` (collectors there now), `collect/lost_workers` (whose node
or process died) and `collect/samples_from/<worker>` (env steps received from each).
"""
from __future__ import annotations

import logging
from typing import Any, Dict, Optional

from rlpipe.engine import parallel

from .distributed import role_main

log = logging.getLogger("rlpipe")


def serve(name: str, address: Optional[str] = None, queue_size: int = 4,
          lost_after_s: float = 5.0) -> str:
    """Start hub `name` on the cluster at `address` (default "auto"); returns a line to print."""
    parallel.require_ray()
    parallel.serve_hub(name, address, queue_size, lost_after_s)
    where = address or "auto"
    return (f"hub {name!r} serves on {where}: attach a trainer with `rlpipe trainer {name} "
            f"--address {where} ENTRY` and workers with `rlpipe worker {name} --address "
            f"{where}`; stop it with `rlpipe serve {name} --address {where} --stop`")


def stop(name: str, address: Optional[str] = None) -> str:
    """End hub `name` (a training on it finishes, its workers stop); returns a line to print."""
    parallel.require_ray()
    state = parallel.stop_hub(name, address)
    counters = state["counters"]
    return (f"hub {name!r} stopped: {int(counters.get('env_step', 0))} env steps collected by "
            f"{state['joined']} collector(s), {len(state['lost'])} lost")


def worker(name: str, address: Optional[str] = None, n: int = 1, worker_id: Optional[str] = None,
           num_cpus: float = 1.0, resource: Optional[str] = None) -> str:
    """Add `n` collectors to the training on hub `name` until it ends; returns a line to print."""
    parallel.require_ray()
    if not num_cpus >= 0:
        raise ValueError(f"rlpipe worker --num-cpus must be >= 0, got {num_cpus!r}")
    outcome = parallel.run_workers(name, address, n, role_main, worker_id, num_cpus, resource)
    line = f"worker of hub {name!r}: {len(outcome['ended'])} collector(s) ended with the training"
    if outcome["lost"]:
        line += f", {len(outcome['lost'])} lost ({', '.join(outcome['lost'])})"
    return line
