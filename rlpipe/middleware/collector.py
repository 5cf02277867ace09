"""Collectors: act in the environments and hand transitions to the next middleware.

A transition step is one dict of arrays over all envs of the manager (`obs`, `action`,
`reward`, `next_obs`, `terminated`, `truncated`, `valid`, plus what the policy returned, e.g.
`logp`, `value`; a recurrent policy's steps add `first` and `state`, see _acting). Rows with
`valid` False are not transitions (an env that was restarted) and are dropped by
`data_pusher`; keeping the [step, env] layout lets on-policy estimators see whole per-env
sequences.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from rlpipe.contexts import OnlineRLContext
from rlpipe.data import PerEnvOutput, batch_of
from rlpipe.engine import Role, contract

from ._acting import Acting, EnvCursor, check_cursor, shared_cursor
from ._make_acting import make_acting
from ._cfg import setting

log = logging.getLogger(__name__)

__all__ = ["EnvCursor", "EpisodeCollector", "StepCollector", "StepCollectorAsync", "inferencer",
           "rolloutor"]


def inferencer(seed: Optional[int], policy: Any, env: Any, cursor: Optional[EnvCursor] = None,
               random_collect_size: int = 0) -> Callable:
    """Choose actions for the envs' current observations (`ctx.obs` → `ctx.action`).

    `seed` seeds the first reset of `env` when given; `policy` is a collect face, refreshed (its
    acting copy takes the learner's weights) before the first action of each iteration.
    `ctx.inference_output` is a `PerEnvOutput`: `ctx.inference_output[env_id]` is that env's
    output dict (DI-engine's `Dict[int, Dict]`), and `.batch` the batched dict the policy returned.
    `cursor`: the `EnvCursor` to act from, shared with a `rolloutor(..., cursor=)`; without one,
    the inferencer and rolloutor of one env share the task's cursor of that env
    (`Task.shared`). `random_collect_size`: act uniformly at random for the run's first env
    steps, as the collectors' warm-up does. `ctx.env_step` also evaluates the per-env-step
    collect kwargs (`PerEnvStep`, e.g. ε with `policy.other.eps.per_env_step`).
    """
    acting = _LazyActing(policy, env, cursor, seed, random_collect_size)

    @contract(reads=("collect_kwargs", "total_step", "env_step"),
              writes=("obs", "action", "inference_output"), role=Role.COLLECTOR)
    def _inferencer(ctx: OnlineRLContext) -> None:
        actor = acting.get()
        actor.refresh_once_in(ctx.total_step)
        obs, output = actor.act(ctx.env_step, ctx.collect_kwargs)
        ctx.obs = obs
        ctx.inference_output = PerEnvOutput(output, actor.n_envs)
        ctx.action = output["action"]

    return _inferencer


def rolloutor(policy: Any, env: Any, transitions: Optional[List] = None,
              cursor: Optional[EnvCursor] = None) -> Callable:
    """Step the envs with `ctx.action`, append the step to `ctx.trajectories` (or to
    `transitions` when given), count env steps and episodes. `cursor`: as for `inferencer`."""
    acting = _LazyActing(policy, env, cursor, None, 0)

    @contract(
        reads=("obs", "action", "inference_output", "env_step", "env_episode"),
        writes=("trajectories", "trajectory_end_idx", "episode_info", "env_step", "env_episode"),
        role=Role.COLLECTOR, emits=("episode_end",),
    )
    def _rolloutor(ctx: OnlineRLContext) -> None:
        target = transitions
        if target is None:
            target = ctx.trajectories
            if target is None:
                target = ctx.trajectories = []
        acting.get().step(ctx, ctx.obs, ctx.action, batch_of(ctx.inference_output), target)

    return _rolloutor


class _LazyActing:
    """The `Acting` of an inferencer or rolloutor, made on its first call: with the task's
    shared cursor of the env unless a cursor was given."""

    __slots__ = ("args", "seed", "acting")

    def __init__(self, policy: Any, env: Any, cursor: Optional[EnvCursor], seed: Optional[int],
                 random_collect_size: int) -> None:
        check_cursor(cursor, env)
        self.args = (policy, env, cursor, random_collect_size)
        self.seed = seed
        self.acting: Optional[Acting] = None

    def get(self) -> Acting:
        if self.acting is None:
            policy, env, cursor, random_collect_size = self.args
            if cursor is None:
                cursor = shared_cursor(env)
            if self.seed is not None and cursor.obs is None:
                cursor.seed = self.seed
            self.acting = make_acting(policy, env, cursor, random_collect_size)
        return self.acting


MODEL_LOADED = "model_loaded"
"""Emitted where weights from another process were loaded into a policy's network (DI-engine's
ModelExchanger in a launched collector): StepCollector refreshes its acting copy before it
next acts, so that it collects with them."""

_WRITES = ("trajectories", "trajectory_end_idx", "episode_info", "env_step", "env_episode",
           "obs", "action", "inference_output")


@contract(reads=("collect_kwargs", "env_step", "env_episode"), writes=_WRITES,
          role=Role.COLLECTOR, emits=("episode_end",))
class StepCollector:
    """Collect `cfg.policy.collect.n_sample` env steps (summed over envs) per iteration.

    One loop of `Acting.act` and `Acting.step`, the same `Acting` that `inferencer` and
    `rolloutor` wrap (it does not call those two middleware): for the first
    `random_collect_size` env steps of the run, actions are sampled uniformly from the action
    space (warm-up). The collector acts with the policy's own copy of the weights, refreshed
    before its first collection and after every iteration (post-`yield`, when every middleware
    of the iteration has finished), so a learner running beside it in async mode never changes
    weights under it; `inferencer` instead refreshes at its first action of an iteration. `obs`, `action` and
    `inference_output` are those of the iteration's last step. `cursor`: the `EnvCursor` to act
    from (default: one of its own). `max_env_step`: the run's env-step budget; the collection
    that would pass it is cut to the env steps left (in whole vector steps, so it can end up to
    n_envs - 1 steps past it), and a run whose budget is a whole number of collections is
    unchanged. Leave it None where a shorter collection would change the algorithm (an
    on-policy rollout) or where `ctx.env_step` is not this collector's alone.
    """

    def __init__(self, cfg: Any, policy: Any, env: Any, random_collect_size: Optional[int] = None,
                 cursor: Optional[EnvCursor] = None,
                 max_env_step: Optional[int] = None) -> None:
        self.policy = policy
        self.env = env
        self.n_sample = _positive(cfg, "policy.collect.n_sample")
        self.max_env_step = max_env_step
        self.acting = make_acting(policy, env, cursor, _warmup(cfg, random_collect_size))
        self.random_collect_size = self.acting.random_collect_size

    def attach(self, task: Any) -> None:
        """Called by `task.use`: listen for weights loaded from another process."""
        task.on(MODEL_LOADED, self._weights_loaded)

    def _weights_loaded(self, *args: Any) -> None:
        self.acting.refreshed = False  # refresh before the next collection

    def __call__(self, ctx: OnlineRLContext):
        acting = self.acting
        if not acting.refreshed:
            acting.refresh()
        steps: List[Dict[str, Any]] = []
        ctx.trajectories = steps
        collected = 0
        quota = self.n_sample
        if self.max_env_step is not None:
            quota = max(1, min(quota, self.max_env_step - ctx.env_step))
        while collected < quota:
            obs, output = acting.act(ctx.env_step, ctx.collect_kwargs)
            collected += acting.step(ctx, obs, output["action"], output, steps)
        _last_step(ctx, obs, output, acting.n_envs)
        yield
        acting.refresh()

    def get_state(self) -> Dict[str, Any]:
        """The observation each env acts from next, and a recurrent policy's hidden state and
        `first` per env (for an exact resume with the env state)."""
        return self.acting.cursor.get_state()

    def set_state(self, state: Dict[str, Any]) -> None:
        self.acting.cursor.set_state(state)

    def close(self) -> None:
        self.env.close()


def StepCollectorAsync(cfg: Any, policy: Any, env: Any,  # noqa: N802 (DI-engine's name)
                       random_collect_size: Optional[int] = None) -> StepCollector:
    """DI-engine's collector for an EnvPool manager in EnvPool's asynchronous mode, where each
    step returns a batch of `collector_batch_size` envs rather than all of them. rlpipe's
    EnvPool `EnvManager` steps every env at every step, so this is `StepCollector(cfg,
    policy, env, random_collect_size)`, and it says so once in the log."""
    log.info("StepCollectorAsync: rlpipe's EnvManager (mode='envpool' too) steps every env at "
             "every step; collecting with StepCollector")
    return StepCollector(cfg, policy, env, random_collect_size=random_collect_size)


@contract(reads=("collect_kwargs", "env_step", "env_episode", "total_step"),
          writes=("episodes",) + _WRITES,
          role=Role.COLLECTOR, emits=("episode_end",))
class EpisodeCollector:
    """Collect `cfg.policy.collect.n_episode` whole episodes per iteration into `ctx.episodes`.

    Each episode is a list of per-step dicts of one env (`obs`, `action`, `reward`, ...).
    Steps of episodes still running when the quota is reached are carried to the next call.
    One loop over an `Acting`, as `StepCollector` (warm-up, counting); the acting copy is
    refreshed at the start of each iteration, as `inferencer` does.
    """

    def __init__(self, cfg: Any, policy: Any, env: Any, random_collect_size: Optional[int] = None,
                 cursor: Optional[EnvCursor] = None) -> None:
        self.policy = policy
        self.env = env
        self.n_episode = _positive(cfg, "policy.collect.n_episode")
        self.acting = make_acting(policy, env, cursor, _warmup(cfg, random_collect_size))
        self.random_collect_size = self.acting.random_collect_size
        self._open: List[List[Dict[str, Any]]] = [[] for _ in range(env.n_envs)]

    def __call__(self, ctx: OnlineRLContext) -> None:
        acting = self.acting
        acting.refresh_once_in(ctx.total_step)
        finished: List[List[Dict[str, Any]]] = []
        steps: List[Dict[str, Any]] = []
        while len(finished) < self.n_episode:
            obs, output = acting.act(ctx.env_step, ctx.collect_kwargs)
            acting.step(ctx, obs, output["action"], output, steps)
            record = steps[-1]
            rows = PerEnvOutput(record, acting.n_envs)  # env i's step: rows[i]
            done = np.logical_or(record["terminated"], record["truncated"])
            for i in range(acting.n_envs):
                if not record["valid"][i]:
                    self._open[i] = []  # the env was restarted: its episode is gone
                    continue
                self._open[i].append(rows[i])
                if done[i]:
                    finished.append(self._open[i])
                    self._open[i] = []
        _last_step(ctx, obs, output, acting.n_envs)
        ctx.episodes = finished
        ctx.trajectories = steps


def _warmup(cfg: Any, random_collect_size: Optional[int]) -> int:
    if random_collect_size is None:
        random_collect_size = setting(cfg, "policy.collect.random_collect_size", 0)
    return int(random_collect_size)


def _positive(cfg: Any, key: str) -> int:
    value = int(setting(cfg, key))
    if value <= 0:
        raise ValueError(f"{key} must be positive, got {value}; set it in the config "
                         f"(`--set {key}=N` on the command line)")
    return value


def _last_step(ctx: OnlineRLContext, obs: Any, output: Dict[str, Any], n_envs: int) -> None:
    """What an inferencer would have left on `ctx` after the iteration's last step."""
    ctx.obs = obs
    ctx.action = output["action"]
    ctx.inference_output = PerEnvOutput(output, n_envs)
