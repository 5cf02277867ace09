"""`rlpipe graph`: a pipeline's dataflow, read from its middleware contracts.

A zoo pipeline is built (envs of one env each, policy, buffer, middleware) on a `Task` that
is started and stopped but never run, so nothing is stepped or trained. Its chain gives each
middleware's name and contract; from those come the dataflow edges (which middleware wrote the
value of each field a later one reads) and, through the async scheduler's own `dependencies`,
which middleware wait for which and which overlap in async mode.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import tempfile
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

import numpy as np

from rlpipe.engine import Contract, Task, contract_of
from rlpipe.engine._scheduler import dependencies

SAME = "this iteration"
PREVIOUS = "previous iteration"
AFTER = "after yield"


@dataclasses.dataclass(frozen=True)
class Stage:
    """One middleware of the chain: its position, name and contract (None: undeclared)."""

    position: int
    name: str
    contract: Optional[Contract]


@dataclasses.dataclass(frozen=True)
class Edge:
    """`target` reads `field` as `source` wrote it, in this iteration, in the previous one
    (the field is kept and written later in the chain), or after `target`'s `yield`."""

    source: int
    target: int
    field: str
    when: str


@dataclasses.dataclass(frozen=True)
class PipelineGraph:
    """A chain's dataflow: stages, edges, and the async scheduler's view of it."""

    title: str
    stages: Tuple[Stage, ...]
    edges: Tuple[Edge, ...]
    waits_for: Tuple[Tuple[int, ...], ...]
    """For each stage, the earlier ones it waits for in async mode (`dependencies`)."""
    overlaps: Tuple[Tuple[int, ...], ...]
    """For each stage, the others that may run at the same time as it in async mode."""
    levels: Tuple[int, ...]
    """For each stage, the length of its longest chain of waits (0: starts at once)."""
    note: str = ""
    kept: Optional[FrozenSet[str]] = None
    """The context's kept fields, when known."""


def graph_of_chain(chain: Sequence[Tuple[str, Optional[Contract]]], title: str = "pipeline",
                   note: str = "", kept: Optional[Iterable[str]] = None) -> PipelineGraph:
    """The dataflow graph of `chain`, a list of (middleware name, contract or None).

    `kept`: the context's kept fields; a field read before any middleware of the iteration
    writes it comes from the previous iteration only if kept (None: assume every field is).
    """
    stages = tuple(Stage(i, name, c) for i, (name, c) in enumerate(chain))
    contracts = [s.contract for s in stages]
    deps = dependencies(contracts)
    before: List[Set[int]] = []  # every stage that must finish before this one (transitively)
    levels: List[int] = []
    for d in deps:
        before.append(set(d).union(*(before[i] for i in d)))
        levels.append(1 + max((levels[i] for i in d), default=-1))
    overlaps = tuple(tuple(i for i in range(len(stages))
                           if i != j and i not in before[j] and j not in before[i])
                     for j in range(len(stages)))
    kept = None if kept is None else frozenset(kept)
    edges = tuple(_edges(contracts, kept))
    return PipelineGraph(title, stages, edges, tuple(deps), overlaps, tuple(levels), note, kept)


def _edges(contracts: Sequence[Optional[Contract]], kept: Optional[frozenset]) -> Iterable[Edge]:
    writers = [c.writes if c is not None else frozenset() for c in contracts]
    for j, c in enumerate(contracts):
        if c is None:
            continue
        for field in sorted(c.reads):
            earlier = [i for i in range(j) if field in writers[i]]
            later = [i for i in range(j, len(contracts)) if field in writers[i]]  # j: its own
            if earlier:
                yield Edge(earlier[-1], j, field, SAME)
            elif later and (kept is None or field in kept):
                yield Edge(later[-1], j, field, PREVIOUS)
        for field in sorted(c.reads_after):
            others = [i for i in range(len(contracts)) if i != j and field in writers[i]]
            if others:
                yield Edge(others[-1], j, field, AFTER)


def chain_of(install: Any, ctx: Any, async_mode: bool = False) -> List[Tuple[str, Optional[Contract]]]:
    """(name, contract) of each middleware `install(task)` puts on a task; nothing runs.

    The task records what `use()` is given through a pass-through wrapper and names it as
    its profile does. A progress bar made while installing draws nothing.
    """
    used: List[Any] = []

    def record(fn: Any) -> Any:
        used.append(fn)
        return fn

    t = Task()
    with contextlib.redirect_stderr(io.StringIO()):  # a tqdm bar's empty first frame
        with t.start(async_mode=async_mode, ctx=ctx):
            t.use_wrapper(record)
            install(t)
            names = [row.name for row in t.profile().middleware]
    if len(names) != len(used):
        raise RuntimeError(f"graph: the task holds {len(names)} middleware but {len(used)} went "
                           f"through use(); a middleware of another role was voided")
    return [(name, contract_of(fn)) for name, fn in zip(names, used)]


def pipeline_graph(cfg: Any, policy_cls: Any, title: str = "pipeline") -> PipelineGraph:
    """The graph of the zoo pipeline `cfg` would train with `policy_cls`, built but not run.

    `cfg` is a resolved run config (off-policy when it has a `replay` section, else
    on-policy); it is copied, with one env per env manager, no resume, and a temporary run
    folder so that the logger and checkpoint saver are part of the graph as in a real run.
    """
    from rlpipe.pipelines.offline import build_offline
    from rlpipe.pipelines.offpolicy import build_offpolicy
    from rlpipe.pipelines.onpolicy import build_onpolicy

    offpolicy = "replay" in cfg
    offline = "dataset" in cfg and not offpolicy
    note = ""
    if cfg.get("async_mode") and offpolicy:
        note = ("`rlpipe train --async` runs this entry's collector and evaluator in processes of "
                "their own (docs/distributed.md); the async column is what "
                "task.start(async_mode=True) overlaps in one process.")
    with tempfile.TemporaryDirectory(prefix="rlpipe-graph-") as run_dir:
        cfg = copy.deepcopy(cfg)
        cfg.env.update(n_envs=1, eval_n_envs=1, mode="sync", step_timeout=None)
        cfg.update(run_dir=run_dir, resume_from=None)
        if "parallel" in cfg:
            cfg.parallel.collectors = 0
        if offline:  # a stand-in data set: the graph needs its spaces, not its data
            pipeline = build_offline(cfg, policy_cls, _stand_in_dataset(cfg))
        else:
            build = build_offpolicy if offpolicy else build_onpolicy
            pipeline = build(cfg, policy_cls)
        try:
            chain = chain_of(pipeline.install, pipeline.ctx, bool(cfg.get("async_mode")))
        finally:
            pipeline.close()
    kind = "offline" if offline else "off-policy" if offpolicy else "on-policy"
    return graph_of_chain(chain, f"{title} ({kind} pipeline, {len(chain)} middleware)", note,
                          kept=pipeline.ctx.kept)


def _stand_in_dataset(cfg: Any) -> Any:
    """Random observations and actions in the spaces of `cfg.env.id`, one batch long: only
    for drawing an offline pipeline when its data set need not exist."""
    from rlpipe.data import OfflineDataset
    from rlpipe.envs import EnvManager

    if not cfg.env.id:
        raise ValueError("rlpipe graph of an offline run needs its env: pass --set env.id=ID")
    env = EnvManager(cfg.env.id, n_envs=1, mode="sync",
                     env_kwargs=dict(cfg.env.env_kwargs) or None)
    try:
        obs_space, action_space = env.observation_space, env.action_space
    finally:
        env.close()
    steps = int(cfg.policy.learn.batch_size) + 1

    def episode(reward: float) -> Dict[str, np.ndarray]:
        return {"observations": np.stack([obs_space.sample() for _ in range(steps + 1)]),
                "actions": np.stack([action_space.sample() for _ in range(steps)]),
                "rewards": np.full(steps, reward, np.float32),
                "terminations": np.zeros(steps, bool),
                "truncations": np.arange(steps) == steps - 1}

    # two returns that differ, for policies that scale rewards by the return range (IQL)
    return OfflineDataset.from_episodes([episode(0.0), episode(1.0)], obs_space, action_space)


def entry_graph(name: str, overrides: Iterable[str] = ()) -> PipelineGraph:
    """The graph of zoo entry `name` (with `--set` style `overrides`)."""
    from rlpipe.zoo.registry import get_entry

    entry = get_entry(name)
    entry.check_requirements()
    cfg = entry.resolve({"progress": True}, overrides)
    return pipeline_graph(cfg, entry.policy_cls, title=name)


def _fields(names: Iterable[str]) -> str:
    return ", ".join(sorted(names)) or "—"


def _label(graph: PipelineGraph, i: int) -> str:
    return f"[{i}] {graph.stages[i].name}"


def format_graph(graph: PipelineGraph) -> str:
    """The graph as text: one block per middleware, then how to read it."""
    lines = [graph.title, ""]
    for stage in graph.stages:
        i, c = stage.position, stage.contract
        role = "" if c is None or c.role is None else f"  (role: {c.role.value})"
        lines.append(f"{_label(graph, i)}{role}")
        if c is None:
            lines.append("    undeclared: reads and writes every field (a barrier)")
        else:
            sources = {(e.target, e.field): e for e in graph.edges if e.when != AFTER}
            reads = []
            for field in sorted(c.reads):
                e = sources.get((i, field))
                if e is None:
                    kept = graph.kept is not None and field in graph.kept
                    reads.append(f"{field} ({'kept' if kept else 'initial value'})")
                elif e.when == SAME:
                    reads.append(f"{field} <- [{e.source}]")
                else:
                    reads.append(f"{field} <- [{e.source}] {PREVIOUS}")
            lines.append(f"    reads:       {', '.join(reads) or '—'}")
            lines.append(f"    writes:      {_fields(c.writes)}")
            if c.reads_after:
                after = [f"{e.field} <- [{e.source}]" for e in graph.edges
                         if e.target == i and e.when == AFTER]
                lines.append(f"    after yield: {', '.join(after) or _fields(c.reads_after)}")
            events = [f"emits {_fields(c.emits)}"] if c.emits else []
            events += ["may finish the run"] if c.finishes else []
            if events:
                lines.append(f"    events:      {'; '.join(events)}")
        waits = ", ".join(f"[{k}]" for k in graph.waits_for[i]) or "nothing"
        beside = ", ".join(f"[{k}]" for k in graph.overlaps[i]) or "nothing"
        lines.append(f"    async:       waits for {waits}; may overlap {beside}")
    lines += ["", "`a <- [k]`: the value of a that middleware [k] wrote earlier in the iteration "
              f"(`{PREVIOUS}`: in the one before; a kept field).",
              "async: what task.start(async_mode=True) waits for (a write/read, read/write or "
              "write/write conflict) and runs at the same time."]
    if graph.note:
        lines.append(graph.note)
    return "\n".join(lines)
