"""Policies by name: `get_policy("dqn")` → DQNPolicy; which algorithm takes which spaces.

The space table is read from the policy classes (`action_space_types`, `obs_space_types`), so a
policy registered with `register_policy` appears in it (`rlpipe list --spaces`) and in the
refusal that names which algorithms take which action spaces (`spaces_line()`).
"""
from __future__ import annotations

import difflib
from typing import Dict, List, Optional, Sequence, Tuple, Type

import gymnasium as gym

from .base import Policy
from .dqn import DQNPolicy
from .ppo import PPOPolicy
from .random_policy import RandomPolicy
from .sac import SACPolicy
from .td3 import TD3Policy

__all__ = ["ACTION_SPACES", "OBSERVATION_SPACES", "UnknownPolicyError", "action_space_table",
           "get_policy", "policy_names", "register_policy", "registered_name", "spaces_line",
           "takes"]

_REGISTRY: Dict[str, Type[Policy]] = {"dqn": DQNPolicy, "ppo": PPOPolicy, "random": RandomPolicy}
_REGISTRY.update({"sac": SACPolicy, "td3": TD3Policy})  # continuous control


class UnknownPolicyError(KeyError):
    """No policy is registered under that name (the message lists the known ones)."""

    def __str__(self) -> str:
        return str(self.args[0])


def register_policy(name: str, cls: Type[Policy], *, overwrite: bool = False) -> None:
    """Make `cls` available as `get_policy(name)` (names are case-insensitive)."""
    key = name.lower()
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise TypeError(f"register_policy({name!r}, ...) needs a Policy subclass, got {cls!r}.")
    if key in _REGISTRY and _REGISTRY[key] is not cls and not overwrite:
        raise ValueError(f"a policy is already registered as {name!r} ({_REGISTRY[key].__name__});"
                         " pass overwrite=True to replace it.")
    _REGISTRY[key] = cls


def get_policy(name: str) -> Type[Policy]:
    """The policy class registered under `name`."""
    try:
        return _REGISTRY[name.lower()]
    except KeyError:
        close = difflib.get_close_matches(name.lower(), list(_REGISTRY), n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownPolicyError(
            f"no policy named {name!r}.{hint} Known policies: {', '.join(policy_names())}. "
            "Register a new one with rlpipe.policies.register_policy(name, cls).") from None


def policy_names() -> List[str]:
    """Registered policy names, sorted."""
    return sorted(_REGISTRY)


def registered_name(cls: Type[Policy]) -> Optional[str]:
    """The name `cls` is registered under (the first, sorted, if several), or None."""
    return next((name for name in sorted(_REGISTRY) if _REGISTRY[name] is cls), None)


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


def takes(cls: Type[Policy], space_type: type) -> bool:
    """Whether policy class `cls` declares that it acts in spaces of type `space_type`."""
    return issubclass(space_type, tuple(cls.action_space_types))


def _trainable(names: Optional[Sequence[str]]) -> List[str]:
    if names is not None:
        return list(names)
    return [n for n in policy_names() if getattr(_REGISTRY[n], "pipeline", "")]


def action_space_table(names: Optional[Sequence[str]] = None) -> Dict[str, List[str]]:
    """{algorithm: the action space kinds (names, in ACTION_SPACES order) it takes}, for
    `names` or else every registered policy that the zoo can train (one with a `pipeline`)."""
    return {n: [t.__name__ for t in ACTION_SPACES if takes(get_policy(n), t)]
            for n in _trainable(names)}


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
