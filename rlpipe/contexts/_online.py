"""Contexts of the standard pipelines: online RL (collect/learn/eval) and offline RL."""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Dict, List, Mapping, Optional, Union

from ._base import Context


@dataclasses.dataclass
class _CommonRLContext(Context):
    """Fields shared by online and offline RL."""

    train_iter: int = 0
    """Number of gradient updates so far (kept)."""
    train_data: Optional[Union[Dict, List]] = None
    """The batch (or batches) the learner trains on in this iteration."""
    train_output: Optional[Union[Dict, List[Dict]]] = None
    """What the learner returned in this iteration: losses and statistics."""
    eval_value: float = -math.inf
    """Mean evaluation return of this iteration's evaluation; -inf when none ran."""
    eval_output: Optional[Dict] = None
    """Details of this iteration's evaluation (returns per episode, lengths)."""
    last_eval_iter: int = -1
    """The `train_iter` at which the last evaluation ran (kept); -1 before the first."""
    last_eval_value: float = -math.inf
    """Mean return of the most recent evaluation, carried across iterations (kept)."""
    eval_weights: Optional[Dict[str, Any]] = None
    """Set only when the evaluation ran in another process (a distributed run's evaluator): the
    networks it evaluated (module name -> state dict), which the checkpoint saver writes to
    best.pt instead of the learner's newer ones."""
    info_for_logging: Dict[str, Any] = dataclasses.field(default_factory=dict)
    """Extra scalars any middleware wants logged this iteration (name -> value)."""

    KEEP = ("train_iter", "last_eval_iter", "last_eval_value")


@dataclasses.dataclass
class OnlineRLContext(_CommonRLContext):
    """Context of online RL: collect from environments, store, learn, evaluate."""

    env_step: int = 0
    """Environment steps collected so far, summed over envs (kept)."""
    env_episode: int = 0
    """Episodes finished by the collector so far (kept)."""
    collect_kwargs: Dict[str, Any] = dataclasses.field(default_factory=dict)
    """Extra arguments for the collect policy this iteration, e.g. {'eps': 0.1}."""
    obs: Any = None
    """The current batched observation of the collector envs (array or tree)."""
    action: Any = None
    """The batched actions chosen for `obs`."""
    inference_output: Optional[Mapping[int, Dict[str, Any]]] = None
    """What the collect policy returned for `obs`, by env id: `inference_output[env_id]` is that
    env's dict (action, log-prob, value ...). `inferencer` writes a view whose `.batch` holds
    the batched arrays (see rlpipe.data.PerEnvOutput)."""
    trajectories: Optional[List] = None
    """Transitions collected this iteration, as dicts of batched arrays."""
    trajectory_end_idx: Optional[List[int]] = None
    """End index in `trajectories` of each episode that finished this iteration."""
    episodes: Optional[List] = None
    """Whole episodes collected this iteration (EpisodeCollector)."""
    episode_info: Optional[List[Dict[str, float]]] = None
    """Return and length of each episode that finished in this iteration's collection."""

    KEEP = ("env_step", "env_episode")


@dataclasses.dataclass
class OfflineRLContext(_CommonRLContext):
    """Context of offline RL: learn from a fixed data set, evaluate."""

    train_epoch: int = 0
    """Which pass over the data set this iteration's batch belongs to, as written by the data
    fetcher (not kept, as in DI-engine's context table: the fetcher owns the count and writes it each
    iteration)."""


@dataclasses.dataclass
class MultiAgentRLContext(OnlineRLContext):
    """Context of online multi-agent RL: the online fields, with an agent axis in the data.

    Transitions in `trajectories` carry per-agent arrays [n_envs, A, ...] plus `agent_mask`,
    `next_agent_mask`, `global_state` and `next_global_state` (see rlpipe.envs'
    MultiAgentEnvManager). `env_step` counts env steps (vector rows), not agent steps; an
    `episode_info` entry's `return` is the team return (summed over agents) and its
    `agent_returns` maps each agent to its own return.
    """

    agents: Optional[List[str]] = None
    """The agents' names in the order of the agent axis (kept); set it from the env manager:
    `MultiAgentRLContext(agents=env.agents)`."""

    KEEP = ("agents",)
