"""rlpipe.models: torch networks (no knowledge of the rest of rlpipe)."""
from rlpipe._threads import apply_thread_policy
from ._errors import ObservationShapeError, UnsupportedSpaceError
from .actor_critic import ActorCritic, RunningNorm
from .continuous import (ContinuousQAC, DeterministicActor, GaussianActor, SquashedGaussianActor,
                         TwinQCritic)
from .conv import ConvTrunk
from ._inputs import batch_rows, obs_as_tensor
from .encoder import Encoder, GivenEncoder, MultiPartEncoder, build_encoder
from .mlp import MLP
from .multi_agent import MultiAgentActorCritic
from .q_network import QNetwork
from .recurrent import RecurrentCore
from .recurrent_q import RecurrentQNetwork
from .value import ValueNetwork

__all__ = [
    "ActorCritic",
    "ContinuousQAC",
    "ConvTrunk",
    "DeterministicActor",
    "Encoder",
    "GaussianActor",
    "GivenEncoder",
    "MLP",
    "MultiAgentActorCritic",
    "MultiPartEncoder",
    "ObservationShapeError",
    "QNetwork",
    "RecurrentCore",
    "RecurrentQNetwork",
    "RunningNorm",
    "SquashedGaussianActor",
    "TwinQCritic",
    "UnsupportedSpaceError",
    "ValueNetwork",
    "batch_rows",
    "build_encoder",
    "obs_as_tensor",
]

apply_thread_policy()  # torch is imported by now: one thread by default (rlpipe/_threads.py)
