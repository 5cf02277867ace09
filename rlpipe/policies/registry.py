"""Policies by name: `get_policy("dqn")` → DQNPolicy; which algorithm takes which spaces.

The space table (`_space_table.py`, re-exported here) is read from the policy classes
(`action_space_types`), so a policy registered with `register_policy` appears in it
(`rlpipe list --spaces`) and in the refusal that names which algorithms take which action spaces
(`spaces_line()`).
"""
from __future__ import annotations

import difflib
from typing import List, Optional, Type

from ._space_table import (_REGISTRY, ACTION_SPACES, OBSERVATION_SPACES, action_space_table,
                           mask_table, spaces_line, takes)
from .base import Policy
from .bc import BCPolicy
from .cql import CQLPolicy
from .discrete_cql import DiscreteCQLPolicy
from .dqn import DQNPolicy
from .iql import IQLPolicy
from .mappo import IPPOPolicy, MAPPOPolicy
from .ppo import PPOPolicy
from .ppo_lstm import PPOLSTMPolicy
from .r2d2 import R2D2Policy
from .random_policy import RandomPolicy
from .sac import SACPolicy
from .td3 import TD3Policy
from .td3_bc import TD3BCPolicy

__all__ = ["ACTION_SPACES", "OBSERVATION_SPACES", "UnknownPolicyError", "action_space_table",
           "get_policy", "mask_table", "policy_names", "register_policy", "registered_name", "spaces_line",
           "takes"]

_REGISTRY.update({"dqn": DQNPolicy, "ppo": PPOPolicy, "random": RandomPolicy})
_REGISTRY.update({"sac": SACPolicy, "td3": TD3Policy})  # continuous control
_REGISTRY.update({"bc": BCPolicy, "iql": IQLPolicy, "td3-bc": TD3BCPolicy})  # offline RL
_REGISTRY.update({"cql": CQLPolicy, "discrete-cql": DiscreteCQLPolicy})
_REGISTRY.update({"mappo": MAPPOPolicy, "ippo": IPPOPolicy})  # multi-agent
_REGISTRY.update({"ppo-lstm": PPOLSTMPolicy})  # recurrent (hidden state per env)
_REGISTRY.update({"r2d2": R2D2Policy})  # recurrent (sequence replay)


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

