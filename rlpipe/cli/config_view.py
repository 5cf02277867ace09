"""`rlpipe config`: the resolved config of an entry, an --algo/--env pair or a run folder, with what
each key means (from the config schema, `rlpipe.schema`) and where its value comes from: your
`--set`, the zoo entry, the field's standard default of a generic run (`rlpipe.standard_defaults`,
naming the reference implementation or paper), or rlpipe's own default."""
from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional

from rlpipe.schema import RUN_KEYS
from rlpipe.standard_defaults import explicit_keys, standard_sources

from rlpipe.zoo.generic import is_generic
from rlpipe.zoo.registry import find_entry, get_entry
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
        entry = find_entry(name, algo, env, list(imports), dataset)
        cfg = entry.resolve({}, overrides)
        entry.drop_stale_stop_value(cfg, overrides)
        header = f"# {entry.name}: {entry.policy_cls.__name__}"
        if is_generic(entry.name):
            source = f"--dataset {dataset}" if dataset else f"--env {env}"
            header += f" (train it with `rlpipe train --algo {algo} {source}`)"
    header += ("\n# [brackets] name where a value comes from; a key without them is at rlpipe's "
               "own default")
    meanings = config_meanings(entry.policy_cls, with_imports=is_generic(entry.name))
    sources = _sources(entry, overrides, from_run=bool(name and os.path.isdir(name)))
    return f"{header}\n{describe_config(cfg, meanings, sources, value_dicts(entry.policy_cls))}"


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


# A generic run's config also names the modules it imports (`rlpipe train --import`).
IMPORTS_MEANING = ("modules imported before the run (`--import`), e.g. ones that register an env "
                   "or a policy")


def config_meanings(policy_cls: type, with_imports: bool = False) -> Dict[str, str]:
    """`{dotted key: meaning}` for a whole run config of `policy_cls`, from the schema: the run
    keys and the policy's declared keys (`policy_cls.declared_keys`)."""
    meanings = {name: k.meaning for name, k in RUN_KEYS.items()}
    if with_imports:
        meanings["imports"] = IMPORTS_MEANING
    meanings.update({name: k.meaning for name, k in policy_cls.declared_keys("policy.").items()
                     if k.meaning})
    return meanings


OPAQUE_KEYS = ("env.env_kwargs", "env.eval_env_kwargs")
"""Dicts that are one value (the env's own keyword arguments), not a config section."""


def value_dicts(policy_cls: type) -> List[str]:
    """The policy's keys declared with a dict default (e.g. `model.encoders`: Dict key ->
    encoder kind): one value each, however many entries a config gives them."""
    return [name for name, k in policy_cls.declared_keys("policy.").items()
            if isinstance(k.default, Mapping)]


def leaf_keys(cfg: Mapping, prefix: str = "", values: Iterable[str] = ()) -> List[str]:
    """Dotted keys of the non-section values of `cfg` (an empty dict, the dicts in
    `OPAQUE_KEYS` and those `values` names count as a value)."""
    opaque = set(OPAQUE_KEYS) | set(values)
    keys: List[str] = []
    for key, value in cfg.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value and dotted not in opaque:
            keys += leaf_keys(value, dotted + ".", opaque)
        else:
            keys.append(dotted)
    return keys


def _lookup(cfg: Mapping, dotted: str) -> Any:
    node: Any = cfg
    for part in dotted.split("."):
        node = node[part]
    return node


def describe_config(cfg: Mapping, meanings: Mapping[str, str],
                    sources: Mapping[str, str] = None, values: Iterable[str] = ()) -> str:
    """One line per key: `key = value  # meaning` (values as JSON where they can be), and
    `[source]` after the meaning for the keys `sources` names (where the value comes from);
    `values`: dict-valued keys shown as one value (`value_dicts`)."""
    keys = leaf_keys(cfg, values=values)
    width = max((len(k) for k in keys), default=0)
    lines = []
    for key in keys:
        value = _lookup(cfg, key)
        try:
            shown = json.dumps(list(value) if isinstance(value, tuple) else value)
        except TypeError:
            shown = repr(value)
        text = f"{key:<{width}} = {shown}"
        meaning = meanings.get(key) or ""
        source = (sources or {}).get(key)
        if source:
            meaning = f"{meaning} [{source}]" if meaning else f"[{source}]"
        lines.append(f"{text:<{width + 20}}  # {meaning}" if meaning else text)
    return "\n".join(lines)
