"""`rlpipe config`: the resolved config of an entry, an --algo/--env pair or a run folder, with what
each key means (from `rlpipe/zoo/_meanings.py`) and where its value comes from: your `--set`, the
zoo entry, the field's standard default of a generic run (`rlpipe.standard_defaults`, naming the
reference implementation or paper), or rlpipe's own default."""
from __future__ import annotations

import os
from typing import Iterable, Optional

from rlpipe.standard_defaults import explicit_keys, standard_sources

from rlpipe.zoo.generic import is_generic
from rlpipe.zoo._meanings import config_meanings, describe_config
from rlpipe.training import drop_stale_stop_value
from rlpipe.zoo.registry import _entry_to_train, get_entry
from rlpipe.runs.create import read_config


def show_config(name: Optional[str] = None, algo: Optional[str] = None,
                env: Optional[str] = None, imports: Iterable[str] = (),
                overrides: Iterable[str] = (), dataset: Optional[str] = None) -> str:
    """The text `rlpipe config` prints: a header naming what was resolved, then one line per
    key (`key = value  # meaning`)."""
    overrides = list(overrides)
    if name and os.path.isdir(name):
        trained, plain = read_config(name)
        entry = get_entry(trained, imports=plain.get("imports", ()))
        cfg = entry.resolve(plain, overrides)
        header = f"# run folder {name}: {trained}"
    else:
        entry = _entry_to_train(name, algo, env, list(imports), dataset)
        cfg = entry.resolve({}, overrides)
        drop_stale_stop_value(entry, cfg, overrides)
        header = f"# {entry.name}: {entry.policy_cls.__name__}"
        if is_generic(entry.name):
            source = f"--dataset {dataset}" if dataset else f"--env {env}"
            header += f" (train it with `rlpipe train --algo {algo} {source}`)"
    header += ("\n# [brackets] name where a value comes from; a key without them is at rlpipe's "
               "own default")
    meanings = config_meanings(entry.policy_cls, with_imports=is_generic(entry.name))
    sources = _sources(entry, overrides, from_run=bool(name and os.path.isdir(name)))
    return f"{header}\n{describe_config(cfg, meanings, sources)}"


def _sources(entry, overrides, from_run: bool) -> dict:
    """Dotted key → where its value comes from, for the keys that were not left at rlpipe's
    own default (those show none)."""
    if from_run:
        sources = {}
    elif is_generic(entry.name):
        sources = standard_sources(entry.standard)
    else:
        sources = {key: f"zoo entry {entry.name}" for key in explicit_keys(entry.config)}
    sources.update({key: "your --set" for key in explicit_keys(None, overrides)})
    return sources
