"""Which registered policy takes which action spaces: the table behind `rlpipe list --spaces`
and the one-line summary that space refusals quote.

It holds the registry's store (`_REGISTRY`, name → policy class, filled by `registry.py`) and
imports no policy module, so `base.py` can quote the table in its refusals without an import
circle. The table is read from each class's `action_space_types`.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import gymnasium as gym

__all__ = ["ACTION_SPACES", "OBSERVATION_SPACES", "action_space_table", "mask_table",
           "spaces_line", "takes"]

# name (lower case) → policy class; registry.py fills it and is the way to change it
_REGISTRY: Dict[str, type] = {}

# The action space kinds of the table, in its column order.
ACTION_SPACES: Tuple[type, ...] = (gym.spaces.Discrete, gym.spaces.MultiDiscrete,
                                   gym.spaces.MultiBinary, gym.spaces.Box, gym.spaces.Dict,
                                   gym.spaces.Tuple)
# The observation spaces the encoders take (models/encoder.py), whatever the algorithm:
# (kind, how it is encoded).
OBSERVATION_SPACES: Tuple[Tuple[str, str], ...] = (
    ("Box vector", "MLP"),
    ("Box image", "conv trunk (uint8, channels first or last)"),
    ("Discrete", "one-hot"),
    ("MultiDiscrete", "one-hot per component"),
    ("Dict", "one encoder per key, features joined (key 'action_mask' is the mask, not a feature)"),
    ("Tuple", "one encoder per part, features joined"),
)


def takes(cls: type, space_type: type) -> bool:
    """Whether policy class `cls` declares that it acts in spaces of type `space_type`."""
    return issubclass(space_type, tuple(cls.action_space_types))


def _trainable(names: Optional[Sequence[str]]) -> List[str]:
    if names is not None:
        return list(names)
    return [n for n in sorted(_REGISTRY) if getattr(_REGISTRY[n], "pipeline", "")]


def action_space_table(names: Optional[Sequence[str]] = None) -> Dict[str, List[str]]:
    """{algorithm: the action space kinds (names, in ACTION_SPACES order) it takes}, for
    `names` or else every registered policy that the zoo can train (one with a `pipeline`)."""
    unknown = [n for n in _trainable(names) if n.lower() not in _REGISTRY]
    if unknown:
        raise KeyError(f"action_space_table: no policy registered as {unknown}; known: "
                       f"{sorted(_REGISTRY)} (rlpipe.policies.register_policy adds one)")
    return {n: [t.__name__ for t in ACTION_SPACES if takes(_REGISTRY[n.lower()], t)]
            for n in _trainable(names)}


def mask_table(names: Optional[Sequence[str]] = None) -> Dict[str, List[str]]:
    """{algorithm: the action space kinds in which it takes action masks}, for the algorithms of
    `action_space_table(names)` that take masks at all (`supports_action_mask`, and the kinds in
    their `mask_space_types`)."""
    table = action_space_table(names)
    out = {}
    for name in table:
        cls = _REGISTRY[name.lower()]
        kinds = getattr(cls, "mask_space_types", ()) if getattr(
            cls, "supports_action_mask", False) else ()
        if kinds:
            out[name] = [t.__name__ for t in ACTION_SPACES if issubclass(t, tuple(kinds))]
    return out


def _and(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def spaces_line(names: Optional[Sequence[str]] = None) -> str:
    """One sentence saying which algorithms take which action spaces, in CLI words, e.g.
    "ppo takes Discrete, MultiDiscrete, MultiBinary and Box actions; dqn Discrete; sac and td3
    Box. Dict/Tuple action spaces: none yet — wrap the env to flatten them"."""
    table = action_space_table(names)
    nested = {"Dict", "Tuple"}
    groups: Dict[Tuple[str, ...], List[str]] = {}
    for name, kinds in table.items():
        flat = tuple(k for k in kinds if k not in nested)
        if flat:
            groups.setdefault(flat, []).append(name)
    # the algorithm taking the most kinds first (it is the one to try), then by name
    order = sorted(groups.items(), key=lambda item: (-len(item[0]), item[1]))
    parts = [_and(algos) + (" takes " if len(algos) == 1 else " take ") + _and(list(kinds))
             + " actions" if i == 0 else f"{_and(algos)} {_and(list(kinds))}"
             for i, (kinds, algos) in enumerate(order)]
    nested_takers = [n for n, kinds in table.items() if nested & set(kinds)]
    tail = ("Dict/Tuple action spaces: " + _and(nested_takers) if nested_takers else
            "Dict/Tuple action spaces: none yet — wrap the env to flatten them into one of these")
    return "; ".join(parts) + ". " + tail
