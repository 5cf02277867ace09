"""What each config key means, for `rlpipe config`.

Meanings come from where the defaults are maintained:

- the run sections: `RUN_KEYS` of `_run_keys.py`, beside each key's default (every pipeline's
  RUN_DEFAULTS is made from it), and the generic runs' `imports` below;
- a policy's own keys: the end-of-line comment beside the key in its `default_config()` (the
  policy modules already document every setting that way), or the policy class's optional
  `config_meanings` dict (dotted key below `policy.` → meaning), which wins;
- the pipeline settings every policy section carries (`PIPELINE_DEFAULTS`): `PIPELINE_MEANINGS`.
"""
from __future__ import annotations

import inspect
import io
import json
import textwrap
import tokenize
from typing import Any, Dict, List, Mapping

from rlpipe.pipelines.run_keys import RUN_KEYS

RUN_MEANINGS: Dict[str, str] = {
    **{key: meaning for key, (_, meaning) in RUN_KEYS.items()},
    "imports": "modules imported before the run (`--import`), e.g. ones that register "
               "an env or a policy",
}

PIPELINE_MEANINGS: Dict[str, str] = {
    "collect.n_sample": "env steps collected per iteration (summed over envs)",
    "collect.n_episode": "episodes collected per iteration (episode collectors)",
    "collect.random_collect_size": "first env steps taken with uniformly random actions",
    "other.eps.type": "epsilon schedule of eps-greedy exploration ('linear' or 'exp')",
    "other.eps.start": "epsilon at the start",
    "other.eps.end": "epsilon at the end of the decay",
    "other.eps.decay": "env steps over which epsilon decays",
    "other.eps.per_env_step": "recompute epsilon before every env step (SB3's way) instead of "
                              "once per iteration",
    "learn.update_per_collect": "learn steps per iteration",
    "eval.evaluator.eval_freq": "evaluate every this many train iterations (learn steps)",
    "eval.evaluator.n_episode": "episodes per evaluation",
}


def comment_meanings(policy_cls: type) -> Dict[str, str]:
    """`{dotted key: comment}` from the end-of-line comments in `policy_cls.default_config()`
    and in those of its base classes (a subclass such as CQL on SAC states only the keys it adds
    or changes; its comment wins for a key both write)."""
    found: Dict[str, str] = {}
    for klass in reversed(policy_cls.__mro__):
        method = klass.__dict__.get("default_config")
        if method is not None:
            found.update(_source_comments(getattr(method, "__func__", method)))
    return found


def _source_comments(method: Any) -> Dict[str, str]:
    """`{dotted key: comment}` from the source of one `default_config`; keys are found as
    `name=` inside `dict(...)`/`EasyDict(...)` calls, nested sections as `name=dict(`."""
    try:
        source = textwrap.dedent(inspect.getsource(method))
    except (OSError, TypeError):  # defined in a REPL or built dynamically: no source to read
        return {}
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    found: Dict[str, str] = {}
    path: List[str] = []
    opened: List[bool] = []  # per open bracket: did it open a named section?
    pending: List[tuple] = []  # (dotted key, line) waiting for a comment on that line
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.OP and tok.string in "([{":
            prev = tokens[i - 2] if i >= 2 else None
            named = (tok.string == "(" and prev is not None and prev.type == tokenize.OP
                     and prev.string == "=" and tokens[i - 1].string in ("dict", "EasyDict")
                     and i >= 3 and tokens[i - 3].type == tokenize.NAME)
            if named:
                path.append(tokens[i - 3].string)
            opened.append(named)
        elif tok.type == tokenize.OP and tok.string in ")]}":
            if opened and opened.pop():
                path.pop()
        elif (tok.type == tokenize.NAME and i + 1 < len(tokens) and tokens[i + 1].string == "="
              and opened and (len(opened) == 1 or opened[-1])):
            is_section = i + 3 < len(tokens) and tokens[i + 2].string in ("dict", "EasyDict") \
                and tokens[i + 3].string == "("
            if not is_section:
                pending.append((".".join(path + [tok.string]), tok.start[0]))
        elif tok.type == tokenize.COMMENT:
            text = tok.string.lstrip("#").strip()
            for key, line in pending:
                if line == tok.start[0] and text:
                    found[key] = text
            pending = [(k, ln) for k, ln in pending if ln > tok.start[0]]
    return found


def config_meanings(policy_cls: type, with_imports: bool = False) -> Dict[str, str]:
    """`{dotted key: meaning}` for a whole run config of `policy_cls`."""
    meanings = {k: v for k, v in RUN_MEANINGS.items() if with_imports or k != "imports"}
    policy = {**PIPELINE_MEANINGS, **comment_meanings(policy_cls),
              **dict(getattr(policy_cls, "config_meanings", {}) or {})}
    meanings.update({f"policy.{k}": v for k, v in policy.items()})
    return meanings


OPAQUE_KEYS = ("env.env_kwargs", "env.eval_env_kwargs")
"""Dicts that are one value (the env's own keyword arguments), not a config section."""


def leaf_keys(cfg: Mapping, prefix: str = "") -> List[str]:
    """Dotted keys of the non-section values of `cfg` (an empty dict, and the dicts in
    `OPAQUE_KEYS`, count as a value)."""
    keys: List[str] = []
    for key, value in cfg.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value and dotted not in OPAQUE_KEYS:
            keys += leaf_keys(value, dotted + ".")
        else:
            keys.append(dotted)
    return keys


def _lookup(cfg: Mapping, dotted: str) -> Any:
    node: Any = cfg
    for part in dotted.split("."):
        node = node[part]
    return node


def describe_config(cfg: Mapping, meanings: Mapping[str, str],
                    sources: Mapping[str, str] = None) -> str:
    """One line per key: `key = value  # meaning` (values as JSON where they can be), and
    `[source]` after the meaning for the keys `sources` names (where the value comes from)."""
    keys = leaf_keys(cfg)
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
