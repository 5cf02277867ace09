"""Config helpers shared by every layer: merge a user config over defaults, apply `a.b=c` overrides.

Rules of `merge_config` (the defaults are the schema):

- a key that the defaults do not have is an error naming the full dotted key and its close matches;
- a dict default is a section: the user's value must be a mapping and is merged key by key
  (an *empty* dict default is an open mapping: any keys are accepted, unchecked);
- a default of None accepts any value (use it for optional or free-form settings), and None is
  accepted for any non-section key (None means "off"/"unset", e.g. ``grad_clip=None``; the
  component that reads the key says whether it may be None);
- otherwise the user's value must have the default's type, with these conversions:
  int → float (``lr=1`` gives ``1.0``), an integral float → int (``1e6`` for an int key),
  list ↔ tuple (converted to the default's type). bool is never taken for a number, nor a
  number for a bool.

Errors are `ConfigError`s: `UnknownConfigKeyError` is also a `KeyError`, `ConfigTypeError` is also
a `TypeError`, so callers can catch either the family or the specific kind.
"""
from __future__ import annotations

import ast
import copy
import difflib
import numbers
from typing import Any, Iterable, Mapping

import numpy as np
from easydict import EasyDict

__all__ = [
    "ConfigError",
    "ConfigTypeError",
    "UnknownConfigKeyError",
    "apply_overrides",
    "merge_config",
    "to_plain",
]


class ConfigError(ValueError):
    """A config that does not fit its defaults (base of the more specific errors below)."""

    def __init__(self, message: str, key: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.key = key

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return self.message


class UnknownConfigKeyError(ConfigError, KeyError):
    """A key that the defaults do not declare; `close_matches` lists the likely intended keys."""

    def __init__(self, message: str, key: str = "", close_matches: tuple = ()) -> None:
        super().__init__(message, key)
        self.close_matches = close_matches


class ConfigTypeError(ConfigError, TypeError):
    """A value whose type does not fit the default's type."""


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else str(key)


def _unknown_key(path: str, key: str, known: Iterable[str]) -> UnknownConfigKeyError:
    known = sorted(str(k) for k in known)
    full = _join(path, key)
    close = tuple(_join(path, c) for c in difflib.get_close_matches(str(key), known, n=3, cutoff=0.6))
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    where = f"section {path!r}" if path else "the top level"
    return UnknownConfigKeyError(
        f"unknown config key {full!r}.{hint} Keys known in {where}: {', '.join(known) or '(none)'}. "
        "Fix the spelling, or add the key to the defaults if it is new.",
        key=full,
        close_matches=close,
    )


def _type_error(key: str, default: Any, value: Any, expected: str | None = None) -> ConfigTypeError:
    expected = expected or type(default).__name__
    return ConfigTypeError(
        f"config key {key!r} expects {expected} (default {default!r}), "
        f"got {type(value).__name__} {value!r}.",
        key=key,
    )


def _check_value(key: str, default: Any, value: Any) -> Any:
    """Return `value` converted to the default's type, or raise ConfigTypeError."""
    if default is None or value is None:
        return copy.deepcopy(value)
    if isinstance(default, bool):
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        raise _type_error(key, default, value, "bool")
    if isinstance(value, (bool, np.bool_)):  # bool is an int subclass: never take it for a number
        raise _type_error(key, default, value)
    if isinstance(default, numbers.Integral):
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, numbers.Real) and float(value).is_integer():
            return int(value)
        raise _type_error(key, default, value, "int")
    if isinstance(default, numbers.Real):
        if isinstance(value, numbers.Real):
            return float(value)
        raise _type_error(key, default, value, "float (or int)")
    if isinstance(default, (list, tuple)):
        if isinstance(value, (list, tuple)):
            return type(default)(copy.deepcopy(v) for v in value)
        raise _type_error(key, default, value, "list or tuple")
    if isinstance(default, str):
        if isinstance(value, str):
            return value
        raise _type_error(key, default, value, "str")
    if isinstance(default, type):  # e.g. an activation class: take any class
        if isinstance(value, type):
            return value
        raise _type_error(key, default, value, "a class")
    if isinstance(value, type(default)):
        return copy.deepcopy(value)
    raise _type_error(key, default, value)


def merge_config(defaults: Mapping, user: Mapping | None, path: str = "", *,
                 allow_unknown: bool = False) -> EasyDict:
    """Deep-merge `user` over `defaults` and return a new EasyDict (neither input is modified).

    `path` is the dotted location of these mappings in a larger config; it prefixes the keys
    named in errors (``merge_config(DQNPolicy.default_config(), cfg.policy, path="policy")``).
    With `allow_unknown=True` keys the defaults lack are copied through unchecked instead of
    raising (for a component that reads only part of a section, e.g. a policy given the run
    config's policy section, which also holds the pipeline's settings); known keys are still
    type-checked.
    """
    if not isinstance(defaults, Mapping):
        raise ConfigTypeError(f"defaults at {path or 'the top level'!r} must be a mapping, got "
                              f"{type(defaults).__name__}.", key=path)
    merged = {k: copy.deepcopy(v) for k, v in defaults.items()}
    if user is None:
        return EasyDict(merged)
    if not isinstance(user, Mapping):
        raise ConfigTypeError(
            f"config {path or '(top level)'!r} must be a mapping (dict), got {type(user).__name__} "
            f"{user!r}.", key=path)
    open_mapping = len(defaults) == 0
    for key, value in user.items():
        full = _join(path, key)
        if key not in defaults:
            if not (open_mapping or allow_unknown):
                raise _unknown_key(path, key, defaults.keys())
            merged[key] = copy.deepcopy(value)
            continue
        default = defaults[key]
        if isinstance(default, Mapping):
            if not isinstance(value, Mapping):
                raise _type_error(full, default, value, "a mapping (section)")
            merged[key] = merge_config(default, value, full, allow_unknown=allow_unknown)
        else:
            merged[key] = _check_value(full, default, value)
    return EasyDict(merged)


def _parse_value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        if text.strip().lower().lstrip("+-") in ("nan", "inf", "infinity"):
            return float(text)  # not literals, but numbers: the range checks then refuse them
        return text  # a plain word such as CartPole-v1 or adam


def apply_overrides(cfg: Mapping, overrides: Iterable[str]) -> EasyDict:
    """Apply ``"a.b.c=value"`` overrides (e.g. from ``--set``) and return a new EasyDict.

    Values are Python literals (``3e-4``, ``True``, ``None``, ``(64, 64)``, ``'text'``) or the
    floats ``nan``/``inf``/``-inf``; anything else is kept as the raw string. Where the existing value is a str, the raw
    text is used as is (``env.id=1`` stays ``"1"``). Keys must exist (below a None or empty-dict
    value any key is accepted); types are checked as in `merge_config`.
    """
    result = EasyDict(copy.deepcopy(dict(cfg)))
    for item in overrides:
        if not isinstance(item, str) or "=" not in item:
            raise ConfigError(f"override {item!r} is not of the form 'key.path=value' "
                              "(e.g. 'policy.learn.lr=3e-4').")
        dotted, text = item.split("=", 1)
        dotted, text = dotted.strip(), text.strip()
        parts = dotted.split(".")
        if not dotted or any(not p for p in parts):
            raise ConfigError(f"override {item!r} has an empty key part; write 'a.b.c=value'.")
        # Walk to the parent section, checking each key exists.
        node: Any = result
        for depth, part in enumerate(parts[:-1]):
            here = ".".join(parts[:depth])
            if not isinstance(node, Mapping):
                raise ConfigError(f"override {item!r}: {here!r} is a {type(node).__name__}, "
                                  "not a section, so it has no sub-keys.", key=dotted)
            if part not in node:
                if len(node) == 0:  # an open mapping: any key
                    break
                raise _unknown_key(here, part, node.keys())
            if node[part] is None:
                break
            node = node[part]
        value = _parse_value(text)
        current = _lookup(result, parts)
        if isinstance(current, str) and not isinstance(value, str):
            value = text
        update: Any = value
        for part in reversed(parts):
            update = {part: update}
        result = merge_config(result, update)
    return result


def _lookup(cfg: Mapping, parts: list) -> Any:
    node: Any = cfg
    for part in parts:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def to_plain(cfg: Any) -> Any:
    """A copy of `cfg` made of plain dicts, lists and tuples (safe to pickle and ship to another
    process; rebuild with `EasyDict(...)` there). EasyDicts inside lists are converted too."""
    if isinstance(cfg, Mapping):
        return {k: to_plain(v) for k, v in cfg.items()}
    if isinstance(cfg, list):
        return [to_plain(v) for v in cfg]
    if isinstance(cfg, tuple):
        return tuple(to_plain(v) for v in cfg)
    return copy.deepcopy(cfg)
