"""rlpipe.policies: policies with collect / eval / learn faces, and a registry by name."""
from rlpipe.models import ObservationShapeError, UnsupportedSpaceError

from .base import CollectMode, EvalMode, LearnMode, Policy, describe_space
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
from .registry import UnknownPolicyError, get_policy, policy_names, register_policy
from .sac import SACPolicy
from .td3 import TD3Policy
from .td3_bc import TD3BCPolicy

__all__ = [
    "BCPolicy",
    "CQLPolicy",
    "CollectMode",
    "DQNPolicy",
    "DiscreteCQLPolicy",
    "EvalMode",
    "IPPOPolicy",
    "IQLPolicy",
    "LearnMode",
    "MAPPOPolicy",
    "ObservationShapeError",
    "PPOLSTMPolicy",
    "PPOPolicy",
    "Policy",
    "R2D2Policy",
    "RandomPolicy",
    "SACPolicy",
    "TD3BCPolicy",
    "TD3Policy",
    "UnknownPolicyError",
    "UnsupportedSpaceError",
    "describe_space",
    "get_policy",
    "policy_names",
    "register_policy",
]
