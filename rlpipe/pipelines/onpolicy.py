"""The on-policy pipeline (PPO, MAPPO, recurrent PPO): collect a rollout, GAE, learn from it."""
from __future__ import annotations

import functools
import logging
from typing import Any, Dict, Mapping, Optional, Sequence

from easydict import EasyDict

from rlpipe.config import merge_config
from rlpipe.config_checks import check_config
from rlpipe.engine import parallel
from rlpipe.envs import EnvManager
from rlpipe.middleware import (StepCollector, gae_estimator, interaction_evaluator,
                               multistep_trainer)
from rlpipe.middleware.exchange import Exchange

from .offpolicy import make_envs
from .base import Pipeline, closed_on_error, make_policy, named_point, run_pipeline
from .resume import RunState, resumed_context
from .run_keys import RUN_DEFAULTS
from .tail import run_tail

log = logging.getLogger("rlpipe")


def default_config(policy_cls: Any) -> EasyDict:
    """The full default run config for an on-policy algorithm: run, env, logger and checkpoint
    sections, and the policy's own defaults plus the pipeline's settings (no replay section)."""
    return EasyDict({**RUN_DEFAULTS["on-policy"], "policy": policy_cls.config_schema()})


def resolve_config(policy_cls: Any, entry_config: Mapping,
                   user: Optional[Mapping] = None) -> EasyDict:
    """Defaults ← the zoo entry's config ← the user's config; unknown keys are errors, and so
    are values outside their range (`rlpipe.config_checks`).

    A linear learning-rate schedule without `policy.learn.lr_decay_env_steps` decays over the
    run's `max_env_step`.
    """
    cfg = merge_config(merge_config(default_config(policy_cls), entry_config), user or {})
    learn = cfg.policy.learn
    if learn.get("lr_schedule") == "linear" and learn.get("lr_decay_env_steps") is None:
        learn.lr_decay_env_steps = int(cfg.max_env_step)
    return check_config(cfg, keys=policy_cls.declared_keys("policy."))


def build_onpolicy(cfg: Any, policy_cls: Any, after_collector: Sequence[Any] = (),
                   after_learner: Sequence[Any] = ()) -> Pipeline:
    """Envs, policy, collector and (resumed) context of the on-policy pipeline, and its
    middleware: evaluator → StepCollector → gae_estimator → multistep_trainer → the run's tail.

    Named points to add middleware at, each a list used in order: `after_collector` (they see
    the rollout, `ctx.trajectories`, before GAE does: reward shaping) and `after_learner`
    (after the updates, before the exchange's send and the run's tail)."""
    after_collector = named_point("after_collector", after_collector)
    after_learner = named_point("after_learner", after_learner)
    multi_agent = bool(getattr(policy_cls, "multi_agent", False))
    manager = multi_agent_manager() if multi_agent else EnvManager
    collector_env, evaluator_env = envs = make_envs(cfg, manager)
    with closed_on_error(envs):
        policy = make_policy(cfg, policy_cls, collector_env)
        collector = StepCollector(cfg, policy.collect_mode, collector_env)
        run_state = (RunState(cfg.run_dir, collector_env, evaluator_env, collector)
                     if cfg.run_dir else None)
        # a fresh context unless cfg.resume_from; a multi-agent one names the agent axis
        ctx = resumed_context(cfg, policy, run_state,
                              _agents_context(collector_env) if multi_agent else None)

    link = parallel.link()
    exchange = _exchange(cfg, policy, link) if link else None

    def install(task: Any) -> None:
        if exchange is not None:
            task.use(exchange.receive)
        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(collector)
        for middleware in after_collector:
            task.use(middleware)
        task.use(gae_estimator(cfg, policy.collect_mode))
        task.use(multistep_trainer(cfg, policy.learn_mode))
        for middleware in after_learner:
            task.use(middleware)
        if exchange is not None:
            task.use(exchange.send)
        run_tail(task, cfg, policy, run_state)

    return Pipeline(ctx, install, envs, _rollout_rule(cfg, collector_env.n_envs))


def _rollout_rule(cfg: Any, n_envs: int) -> str:
    """How the budget is rounded: PPO learns from whole rollouts (a shorter last one would be
    a different batch size and advantage horizon), so the run ends at the first whole rollout
    at or past `max_env_step`; logged at the start when that passes the budget."""
    n_sample = int(cfg.policy.collect.n_sample)
    rollout = -(-n_sample // n_envs) * n_envs  # whole vector steps of n_envs envs
    rule = f"whole rollouts of {rollout} env steps"
    budget = cfg.get("max_env_step")
    if budget is not None and budget % rollout:
        rollouts = -(-budget // rollout)
        log.info("max_env_step=%d is not a whole number of rollouts of %d env steps "
                 "(policy.collect.n_sample=%d over %d envs): the run ends after %d rollouts, at "
                 "%d env steps", budget, rollout, n_sample, n_envs, rollouts, rollouts * rollout)
    return rule


def _exchange(cfg: Any, policy: Any, link: Any) -> Exchange:
    """The exchange of a distributed on-policy run: one collector rollout per learner iteration
    (GAE needs a rollout in time order), weights published after every update, and each
    collector waits for them before its next rollout (on-policy data: no rollout acted with
    weights older than needed)."""
    if int(cfg.parallel.batches_per_iter) != 1:
        raise ValueError(f"parallel.batches_per_iter={cfg.parallel.batches_per_iter}: an "
                         f"on-policy learner trains on one collector rollout per iteration "
                         f"(GAE runs along its time axis); leave it at 1")
    return Exchange(cfg, policy, link, publish_every=cfg.parallel.publish_every or 1,
                    on_policy=True)


def _agents_context(env: Any) -> Any:
    """MultiAgentRLContext with the env's agents (the agent axis) filled in and kept."""
    from rlpipe.contexts import MultiAgentRLContext

    return functools.partial(MultiAgentRLContext, agents=list(env.agents))


def multi_agent_manager() -> Any:
    """make_envs' manager for multi-agent policies: rlpipe.envs.MultiAgentEnvManager, given the
    env section's settings it takes (mode "auto" is "sync": PettingZoo envs are cheap steps)."""
    from rlpipe.envs import MultiAgentEnvManager

    def manager(env: Any, mode: str = "sync", action_mask_fn: Any = None, **kwargs: Any) -> Any:
        if action_mask_fn is not None:
            raise ValueError("env.action_mask_fn is for single-agent envs; a PettingZoo env gives "
                             "its masks in obs['action_mask'] or info['action_mask']")
        return MultiAgentEnvManager(env, mode="sync" if mode == "auto" else mode, **kwargs)
    return manager


def run_onpolicy(cfg: Any, policy_cls: Any, after_collector: Sequence[Any] = (),
                 after_learner: Sequence[Any] = ()) -> Dict[str, Any]:
    """Train `policy_cls` with StepCollector → gae_estimator → multistep_trainer; return a summary
    with the keys of `run_offpolicy`'s. `after_collector`, `after_learner`: middleware added at
    those points (`build_onpolicy`)."""
    return run_pipeline(cfg, lambda: build_onpolicy(cfg, policy_cls, after_collector,
                                                    after_learner))
