"""The off-policy pipeline (DQN, SAC, TD3, R2D2): collect into a replay buffer, learn from it."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence

import numpy as np
from easydict import EasyDict

from rlpipe.config import merge_config
from rlpipe.config_checks import check_config
from rlpipe.data import (FrameReplayBuffer, PrioritizedFrameReplayBuffer, PrioritizedReplayBuffer,
                         ReplayBuffer, UpdateSchedule)
from rlpipe.engine import Role, parallel, task
from rlpipe.envs import EnvManager
from rlpipe.middleware import (OffPolicyLearner, StepCollector, data_pusher, eps_greedy_handler,
                               interaction_evaluator, nstep_reward_enhancer)
from rlpipe.middleware.exchange import Exchange

from .base import (DataPath, Pipeline, closed_on_error, make_policy, named_point,
                   run_pipeline)
from .resume import RunState, resumed_context
from .run_keys import RUN_DEFAULTS
from .sequence import sequence_data
from .tail import run_tail


def default_config(policy_cls: Any) -> EasyDict:
    """The full default run config for an off-policy algorithm: run, env, replay, logger,
    checkpoint sections, and the policy's own defaults plus the pipeline's settings."""
    return EasyDict({**RUN_DEFAULTS["off-policy"], "policy": policy_cls.config_schema()})


def resolve_config(policy_cls: Any, entry_config: Mapping,
                   user: Optional[Mapping] = None) -> EasyDict:
    """Defaults ← the zoo entry's config ← the user's config; unknown keys are errors, and so
    are values outside their range (`rlpipe.config_checks`)."""
    cfg = merge_config(default_config(policy_cls), entry_config)
    return check_config(merge_config(cfg, user or {}), keys=policy_cls.declared_keys("policy."))


def mask_settings(env_cfg: Any) -> dict:
    """EnvManager's action-mask arguments from the env section (configs older than them: on)."""
    return dict(action_masks=bool(env_cfg.get("action_masks", True)),
                action_mask_fn=env_cfg.get("action_mask_fn"))


def eval_env_kwargs(env_cfg: Any) -> Optional[dict]:
    """The evaluator's env kwargs: `env.env_kwargs` with `env.eval_env_kwargs` over them (the
    Atari entries train on the "train" preset and evaluate on "eval"); None when empty. Also
    what `rlpipe eval` and videos use."""
    return {**dict(env_cfg.env_kwargs), **dict(env_cfg.get("eval_env_kwargs") or {})} or None


def make_envs(cfg: Any, manager: Any = EnvManager) -> tuple:
    """The collector's and the evaluator's env managers (`manager`: the class, e.g.
    MultiAgentEnvManager for a multi-agent policy). In a process of a distributed run that
    does not collect (or evaluate), that one is a single in-process env: it only gives the
    spaces the policy is built from, so no env worker is started for nothing."""
    env_cfg = cfg.env
    common = dict(mode=env_cfg.mode, step_timeout=env_cfg.step_timeout,
                  env_kwargs=dict(env_cfg.env_kwargs) or None,
                  max_restarts=env_cfg.max_restarts, restart_window=env_cfg.restart_window,
                  **mask_settings(env_cfg))
    spaces_only = dict(common, n_envs=1, mode="sync", step_timeout=None)
    collector_env = manager(env_cfg.id, n_envs=env_cfg.n_envs, seed=cfg.seed, **common) \
        if task.serves(Role.COLLECTOR) else manager(env_cfg.id, seed=cfg.seed, **spaces_only)
    try:
        evaluator_env = manager(env_cfg.id, n_envs=env_cfg.eval_n_envs, seed=cfg.seed + 10_000,
                                **dict(common, env_kwargs=eval_env_kwargs(env_cfg))) \
            if task.serves(Role.EVALUATOR) else manager(env_cfg.id, **spaces_only)
    except BaseException:
        collector_env.close()
        raise
    return collector_env, evaluator_env


def frame_stacks(space: Any, frame_stack: int) -> bool:
    """Whether observations of `space` are uint8 frame stacks ([k, H, W] or [H, W, k])."""
    shape, dtype = getattr(space, "shape", None), getattr(space, "dtype", None)
    return (shape is not None and len(shape) == 3 and dtype == np.uint8
            and frame_stack in (shape[0], shape[-1]))


def use_frames(cfg: Any, obs_space: Any = None) -> bool:
    """`replay.frames`: True stores each frame once (FrameReplayBuffer), False never, None
    (default) picks it when the observations are uint8 stacks of `replay.frame_stack` frames.
    Picking it is safe: any transition is stored exactly, at worst without saving memory."""
    replay = cfg.replay
    frames, k = replay.get("frames"), int(replay.get("frame_stack", 4))
    if frames not in (None, True, False):
        raise ValueError(f"config 'replay.frames' is {frames!r}; use True (store each frame once), "
                         "False (plain rows) or None (auto: on for uint8 frame stacks)")
    fits = obs_space is not None and frame_stacks(obs_space, k)
    if frames is True and obs_space is not None and not fits:
        raise ValueError(f"config 'replay.frames=True' needs uint8 observations [{k}, H, W] or "
                         f"[H, W, {k}] (replay.frame_stack={k}), but the env gives {obs_space}; "
                         "set replay.frames=False or fix replay.frame_stack")
    return bool(frames) if frames is not None else fits


def make_buffer(cfg: Any, obs_space: Any = None) -> Any:
    """The run's replay buffer, carrying the run's `UpdateSchedule` (saved with it for resume);
    a frame buffer when `use_frames(cfg, obs_space)` says so."""
    replay = cfg.replay
    schedule = UpdateSchedule.from_config(cfg)
    if use_frames(cfg, obs_space):
        k = int(replay.get("frame_stack", 4))
        if replay.prioritized:
            return PrioritizedFrameReplayBuffer(replay.capacity, frame_stack=k, alpha=replay.alpha,
                                                beta=replay.beta, seed=cfg.seed, controller=schedule)
        return FrameReplayBuffer(replay.capacity, frame_stack=k, seed=cfg.seed, controller=schedule)
    if replay.prioritized:
        return PrioritizedReplayBuffer(replay.capacity, alpha=replay.alpha, beta=replay.beta,
                                       seed=cfg.seed, controller=schedule)
    return ReplayBuffer(replay.capacity, seed=cfg.seed, controller=schedule)


def transition_data(cfg: Any, collector: Any) -> DataPath:
    """Transitions (n-step when `policy.learn.nstep` > 1) into the run's replay buffer."""
    buffer_ = make_buffer(cfg, getattr(getattr(collector, "env", None), "observation_space", None))

    def install(task: Any) -> None:
        if cfg.policy.learn.get("nstep", 1) > 1:
            task.use(nstep_reward_enhancer(cfg))
        task.use(data_pusher(cfg, buffer_))

    return DataPath(buffer_, collector, install)


def build_offpolicy(cfg: Any, policy_cls: Any, compressor: Any = None,
                    decompressor: Any = None, after_collector: Sequence[Any] = (),
                    after_learner: Sequence[Any] = ()) -> Pipeline:
    """Envs, policy, buffer, collector and (resumed) context of the off-policy pipeline, and
    its middleware in the order of DI-engine's middleware guide; nothing runs yet. A recurrent
    policy (R2D2) learns from sequences (pipelines/sequence.py) instead of transitions.

    Named points to add middleware at, each a list used in order: `after_collector` (they see
    this iteration's `ctx.trajectories` before the buffer does: reward shaping, filters) and
    `after_learner` (after the updates, before the exchange's send and the run's tail)."""
    after_collector = named_point("after_collector", after_collector)
    after_learner = named_point("after_learner", after_learner)
    collector_env, evaluator_env = envs = make_envs(cfg)
    with closed_on_error(envs):
        policy = make_policy(cfg, policy_cls, collector_env)
        link = parallel.link()
        # one process counts its own env steps: its last collection stops at the budget
        budget = None if link else cfg.get("max_env_step")
        collector = StepCollector(cfg, policy.collect_mode, collector_env, max_env_step=budget)
        data = (sequence_data if policy_cls.recurrent else transition_data)(cfg, collector)
        run_state = RunState(cfg.run_dir, collector_env, evaluator_env, data.collector_state,
                             data.buffer, save_buffer=cfg.replay.save_buffer) if cfg.run_dir else None
        ctx = resumed_context(cfg, policy, run_state)
    exchange = Exchange(cfg, policy, link, compressor, decompressor) if link else None

    def install(task: Any) -> None:
        if exchange is not None:
            task.use(exchange.receive)
        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        if getattr(policy_cls, "explores_with_eps", False):  # DQN; SAC/TD3 explore alone
            task.use(eps_greedy_handler(cfg))
        task.use(collector)
        for middleware in after_collector:
            task.use(middleware)
        data.install(task)
        task.use(OffPolicyLearner(cfg, policy.learn_mode, data.buffer, fetcher=data.fetcher))
        for middleware in after_learner:
            task.use(middleware)
        if exchange is not None:
            task.use(exchange.send)
        run_tail(task, cfg, policy, run_state)

    rule = (f"whole vector steps of {collector_env.n_envs} envs" if budget is not None
            else "whole collections")
    return Pipeline(ctx, install, envs, rule)


def run_offpolicy(cfg: Any, policy_cls: Any, compressor: Any = None,
                  decompressor: Any = None, after_collector: Sequence[Any] = (),
                  after_learner: Sequence[Any] = ()) -> Dict[str, Any]:
    """Train `policy_cls` with the pipeline of DI-engine's middleware guide; return a summary.

    In an actor of a distributed run (`parallel.link()` is set) the exchange middleware connect
    it to the others (`compressor`/`decompressor`: optional functions on the trajectories).
    `after_collector`, `after_learner`: middleware added at those points (`build_offpolicy`)."""
    return run_pipeline(cfg, lambda: build_offpolicy(cfg, policy_cls, compressor, decompressor,
                                                     after_collector, after_learner))
