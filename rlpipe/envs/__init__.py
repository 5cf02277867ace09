"""rlpipe.envs: vectorised environments with final-observation handling and crash recovery.

``EnvManager`` runs n copies of a gymnasium environment (sync, async subprocesses, or the env's
native vectorised implementation) behind one ``step()`` that never lets a NEXT_STEP
pseudo-transition through, reports the true final observation of every finished episode, and
restarts crashed or hung envs. ``make_realtime_env`` makes any rtgym interface a gymnasium env
and counts its timing overruns. ``MultiAgentEnvManager`` does the same for PettingZoo parallel
envs, with the agents on an axis of every array and masks for agents that are gone.
"""

from rlpipe.envs._errors import EnvFailureError, MissingDependencyError, UnknownEnvError
from rlpipe.envs._manager import EnvManager, StepResult
from rlpipe.envs._maskedgrid import register as _register_maskedgrid
from rlpipe.envs._multiagent import MultiAgentEnvManager, MultiAgentStepResult
from rlpipe.envs._masks import empty_segments, flat_mask, mask_segments, sample_valid_actions
from rlpipe.envs._obs import BatchObs, obs_to_tree
from rlpipe.envs._pomdp import MaskObservation
from rlpipe.envs._pomdp import register as _register_pomdp
from rlpipe.envs._realtime import make_realtime_env, realtime_overruns
from rlpipe.envs._realtime import register as _register_realtime
from rlpipe.envs._rtpendulum import PendulumInterface, make_rtpendulum
from rlpipe.envs._rtpendulum import register as _register_rtpendulum
from rlpipe.envs._registry import register_env, registered_envs, unregister_env

__all__ = [
    "BatchObs",
    "EnvFailureError",
    "EnvManager",
    "MaskObservation",
    "MissingDependencyError",
    "MultiAgentEnvManager",
    "MultiAgentStepResult",
    "PendulumInterface",
    "StepResult",
    "UnknownEnvError",
    "empty_segments",
    "flat_mask",
    "make_realtime_env",
    "make_rtpendulum",
    "mask_segments",
    "obs_to_tree",
    "realtime_overruns",
    "register_env",
    "registered_envs",
    "sample_valid_actions",
    "unregister_env",
]

_register_maskedgrid()  # gymnasium id "rlpipe/MaskedGrid-v0"
_register_pomdp()  # "rlpipe/CartPoleNoVel-v1", "rlpipe/PendulumNoVel-v1", "rlpipe/RememberFirst-v0"
_register_realtime()  # "rlpipe/RealTime-v0" (needs rtgym when made)
_register_rtpendulum()  # "rlpipe/RTPendulum-v0"
