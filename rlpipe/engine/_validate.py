"""Checking a middleware chain against its contracts before the first iteration."""
from __future__ import annotations

import dataclasses
import difflib
from typing import Dict, List, Optional, Sequence, Tuple

from rlpipe.contexts import Context, field_names

from ._contract import Contract
from ._errors import PipelineError

Entry = Tuple[str, Optional[Contract]]  # (middleware name, contract or None when undeclared)


def validate_chain(chain: Sequence[Entry], ctx: Context) -> None:
    """Raise PipelineError listing every problem of `chain` run on contexts like `ctx`.

    A read must be satisfied by an earlier write, a kept field, or a declared default other than
    None. `reads_after` may be written by any middleware of the chain. An undeclared middleware
    reads and writes everything: reads after it are always satisfied. An optional read is a
    read when the context class declares the field, and is ignored otherwise.
    """
    chain = resolve_chain(chain, ctx)
    problems = _unknown_names(chain, ctx) + _unsatisfied_reads(chain, ctx)
    if problems:
        raise PipelineError(problems)


def resolve_chain(chain: Sequence[Entry], ctx: Context) -> List[Entry]:
    """`chain` with each contract's optional reads resolved against the class of `ctx`."""
    declared = field_names(type(ctx))
    return [(name, None if c is None else c.resolve(declared)) for name, c in chain]


def _label(chain: Sequence[Entry], pos: int) -> str:
    return f"{chain[pos][0]!r} (position {pos})"


def _unknown_names(chain: Sequence[Entry], ctx: Context) -> List[str]:
    cls = type(ctx).__name__
    declared = field_names(type(ctx))
    problems = []
    for pos, (_, c) in enumerate(chain):
        if c is None:
            continue
        for verb, names in (("reads", c.reads), ("writes", c.writes), ("reads after yield", c.reads_after)):
            for name in sorted(names - declared):
                close = difflib.get_close_matches(name, sorted(declared), n=3, cutoff=0.6)
                hint = f" Did you mean {', '.join(repr(m) for m in close)}?" if close else ""
                problems.append(
                    f"middleware {_label(chain, pos)} {verb} ctx.{name}, but {cls} declares no "
                    f"field {name!r}.{hint} Fix: correct the name in its @contract, or subclass "
                    f"{cls} as a @dataclasses.dataclass that declares {name!r} and start the task "
                    f"with that context."
                )
    return problems


def _initial(ctx_cls: type, name: str) -> str:
    for f in dataclasses.fields(ctx_cls):
        if f.name == name:
            if f.default is not dataclasses.MISSING:
                return repr(f.default)
            if f.default_factory is not dataclasses.MISSING:
                return repr(f.default_factory())
    return "unset"


def _usable_without_writer(ctx: Context, name: str) -> bool:
    return name in ctx.kept or ctx.has_default(name)


def _unsatisfied_reads(chain: Sequence[Entry], ctx: Context) -> List[str]:
    cls = type(ctx).__name__
    declared = field_names(type(ctx))
    writers: Dict[str, List[int]] = {}
    for pos, (_, c) in enumerate(chain):
        if c is not None:
            for name in c.writes:
                writers.setdefault(name, []).append(pos)
    undeclared = [pos for pos, (_, c) in enumerate(chain) if c is None]
    problems = []
    written: set = set()
    for pos, (_, c) in enumerate(chain):
        if c is None:
            break  # a barrier: it may write anything, so every later read is satisfied
        for name in sorted((c.reads & declared) - written):
            if _usable_without_writer(ctx, name):
                continue
            later = [p for p in writers.get(name, ()) if p > pos] + [p for p in undeclared if p > pos]
            reader = _label(chain, pos)
            start = (f"middleware {reader} reads ctx.{name}, but no earlier middleware writes it, "
                     f"and {cls} neither keeps it nor gives it a usable default "
                     f"(it starts as {_initial(type(ctx), name)}).")
            if later:
                writer = _label(chain, later[0])
                verb = "writes" if chain[later[0]][1] is not None else "may write (undeclared)"
                fix = (f" {writer} {verb} it later in the chain: move {chain[later[0]][0]!r} "
                       f"before {chain[pos][0]!r}.")
            else:
                fix = f" No middleware of the chain writes it: add one before {chain[pos][0]!r}."
            problems.append(
                start + fix + f" Other fixes: have an earlier middleware write ctx.{name}; keep it "
                f"across iterations with ctx.keep({name!r}) before run() (small values only); or "
                f"subclass {cls} and give {name!r} a default."
            )
        written |= c.writes
    all_written = set(writers)
    for pos, (_, c) in enumerate(chain):
        if c is None or undeclared:
            continue
        for name in sorted((c.reads_after & declared) - all_written):
            if _usable_without_writer(ctx, name):
                continue
            problems.append(
                f"middleware {_label(chain, pos)} reads ctx.{name} after its yield, but no "
                f"middleware of the chain writes it and {cls} neither keeps it nor gives it a "
                f"usable default. Fix: add a middleware that writes ctx.{name}, keep it with "
                f"ctx.keep({name!r}), or subclass {cls} and give {name!r} a default."
            )
    return problems
