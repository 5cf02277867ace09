"""rlpipe.models: torch networks (no knowledge of the rest of rlpipe)."""
from ._errors import ObservationShapeError, UnsupportedSpaceError
from .actor_critic import ActorCritic, RunningNorm
from .continuous import DeterministicActor, SquashedGaussianActor, TwinQCritic
from .conv import ConvTrunk
from .encoder import Encoder, build_encoder
from .mlp import MLP
from .q_network import QNetwork

__all__ = [
    "ActorCritic",
    "ConvTrunk",
    "DeterministicActor",
    "Encoder",
    "MLP",
    "ObservationShapeError",
    "QNetwork",
    "RunningNorm",
    "SquashedGaussianActor",
    "TwinQCritic",
    "UnsupportedSpaceError",
    "build_encoder",
]
