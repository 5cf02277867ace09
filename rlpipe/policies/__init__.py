"""rlpipe.policies: policies with collect / eval / learn faces, and a registry by name."""
from rlpipe.models import ObservationShapeError, UnsupportedSpaceError

from .base import CollectMode, EvalMode, LearnMode, Policy, describe_space
from .cql import CQLPolicy
from .discrete_cql import DiscreteCQLPolicy
from .dqn import DQNPolicy
from .ppo import PPOPolicy
from .random_policy import RandomPolicy
from .registry import UnknownPolicyError, get_policy, policy_names, register_policy
from .sac import SACPolicy
from .td3 import TD3Policy

__all__ = [
    "CQLPolicy",
    "CollectMode",
    "DQNPolicy",
    "DiscreteCQLPolicy",
    "EvalMode",
    "LearnMode",
    "ObservationShapeError",
    "PPOPolicy",
    "Policy",
    "RandomPolicy",
    "SACPolicy",
    "TD3Policy",
    "UnknownPolicyError",
    "UnsupportedSpaceError",
    "describe_space",
    "get_policy",
    "policy_names",
    "register_policy",
]
