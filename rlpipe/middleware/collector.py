"""Collectors: act in the environments and hand transitions to the next middleware.

A transition step is one dict of arrays over all envs of the manager (`obs`, `action`,
`reward`, `next_obs`, `terminated`, `truncated`, `valid`, plus what the policy returned, e.g.
`logp`, `value`). Rows with `valid` False are not transitions (an env that was restarted) and
are dropped by `data_pusher`; keeping the [step, env] layout lets on-policy estimators see
whole per-env sequences.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from rlpipe.contexts import OnlineRLContext
from rlpipe.data import PerEnvOutput, batch_of
from rlpipe.engine import Role, contract, current_task

from ._cfg import setting

_STEP_KEYS = ("obs", "action", "reward", "next_obs", "terminated", "truncated", "valid")


class _EnvCursor:
    """The observation each env of a manager will act from next (reset lazily, once)."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.obs: Any = None

    def current(self) -> Any:
        if self.obs is None:
            self.obs = self.env.reset()
        return self.obs


def _random_actions(space: Any, n: int) -> np.ndarray:
    return np.stack([space.sample() for _ in range(n)])


def _step_record(obs: Any, action: Any, extras: Dict[str, Any], result: Any) -> Dict[str, Any]:
    record = {
        "obs": obs,
        "action": action,
        "reward": result.reward,
        "next_obs": result.next_obs,
        "terminated": result.terminated,
        "truncated": result.truncated,
        "valid": result.valid,
    }
    for key, value in extras.items():
        if key != "action":
            record[key] = value
    return record


def _count_episodes(ctx: OnlineRLContext, result: Any, n_steps_done: int) -> None:
    if result.episodes:
        ctx.episode_info = (ctx.episode_info or []) + list(result.episodes)
        ctx.trajectory_end_idx = (ctx.trajectory_end_idx or []) + [n_steps_done] * len(
            result.episodes
        )
        ctx.env_episode += len(result.episodes)
        task = current_task()
        for episode in result.episodes:
            task.emit("episode_end", episode)


def inferencer(seed: Optional[int], policy: Any, env: Any) -> Callable:
    """Choose actions for the envs' current observations (`ctx.obs` → `ctx.action`).

    `seed` seeds the first reset of `env` when given; `policy` is a collect face.
    `ctx.inference_output` is a `PerEnvOutput`: `ctx.inference_output[env_id]` is that env's
    output dict (seed 003's `Dict[int, Dict]`), and `.batch` the batched dict the policy returned.
    """
    cursor = _cursor_for(env, seed)

    @contract(reads=("collect_kwargs",), writes=("obs", "action", "inference_output"),
              role=Role.COLLECTOR)
    def _inferencer(ctx: OnlineRLContext) -> None:
        ctx.obs = cursor.current()
        batch = policy.forward(ctx.obs, **ctx.collect_kwargs)
        ctx.inference_output = PerEnvOutput(batch, env.n_envs)
        ctx.action = batch["action"]

    return _inferencer


def rolloutor(policy: Any, env: Any, transitions: Optional[List] = None) -> Callable:
    """Step the envs with `ctx.action`, append the step to `ctx.trajectories`, count steps."""
    cursor = _cursor_for(env, None)
    store = transitions

    @contract(
        reads=("obs", "action", "inference_output", "env_step", "env_episode"),
        writes=("trajectories", "trajectory_end_idx", "episode_info", "env_step", "env_episode"),
        role=Role.COLLECTOR, emits=("episode_end",),
    )
    def _rolloutor(ctx: OnlineRLContext) -> None:
        result = env.step(ctx.action)
        record = _step_record(ctx.obs, ctx.action, batch_of(ctx.inference_output), result)
        target = store if store is not None else ctx.trajectories
        if target is None:
            target = ctx.trajectories = []
        target.append(record)
        cursor.obs = result.obs
        ctx.env_step += int(np.count_nonzero(result.valid))
        _count_episodes(ctx, result, len(target))

    return _rolloutor


_CURSORS: "weakref.WeakKeyDictionary[Any, _EnvCursor]" = weakref.WeakKeyDictionary()


def _cursor_for(env: Any, seed: Optional[int]) -> _EnvCursor:
    """One cursor per env manager, shared by the inferencer and rolloutor built on it."""
    cursor = _CURSORS.get(env)
    if cursor is None:
        cursor = _CURSORS[env] = _EnvCursor(env)
        if seed is not None:
            cursor.obs = env.reset(seed=seed)
    return cursor


@contract(
    reads=("collect_kwargs", "env_step", "env_episode"),
    writes=("trajectories", "trajectory_end_idx", "episode_info", "env_step", "env_episode"),
    role=Role.COLLECTOR, emits=("episode_end",),
)
class StepCollector:
    """Collect `cfg.policy.collect.n_sample` env steps (summed over envs) per iteration.

    For the first `random_collect_size` env steps of the run, actions are sampled uniformly
    from the action space (warm-up). The collector acts with the policy's own copy of the
    weights, refreshed after every iteration (post-`yield`), so a learner running beside it in
    async mode never changes weights under it.
    """

    def __init__(self, cfg: Any, policy: Any, env: Any, random_collect_size: Optional[int] = None):
        self.policy = policy
        self.env = env
        self.n_sample = int(setting(cfg, "policy.collect.n_sample"))
        if self.n_sample <= 0:
            raise ValueError(f"policy.collect.n_sample must be positive, got {self.n_sample}")
        if random_collect_size is None:
            random_collect_size = setting(cfg, "policy.collect.random_collect_size", 0)
        self.random_collect_size = int(random_collect_size)
        self._cursor = _EnvCursor(env)
        self._refreshed = False

    def _refresh(self) -> None:
        refresh = getattr(self.policy, "refresh", None)
        if refresh is not None:
            refresh()
        self._refreshed = True

    def __call__(self, ctx: OnlineRLContext):
        if not self._refreshed:
            self._refresh()
        n_envs = self.env.n_envs
        steps: List[Dict[str, Any]] = []
        ctx.trajectories = steps
        collected = 0
        target = self.n_sample
        while collected < target:
            obs = self._cursor.current()
            if ctx.env_step < self.random_collect_size:
                extras: Dict[str, Any] = {}
                action = _random_actions(self.env.action_space, n_envs)
            else:
                extras = self.policy.forward(obs, **ctx.collect_kwargs)
                action = extras["action"]
            result = self.env.step(action)
            steps.append(_step_record(obs, action, extras, result))
            self._cursor.obs = result.obs
            valid = int(np.count_nonzero(result.valid))
            collected += valid
            ctx.env_step += valid
            _count_episodes(ctx, result, len(steps))
        yield
        self._refresh()

    def get_state(self) -> Dict[str, Any]:
        """The observation each env acts from next (for an exact resume with the env state)."""
        return {"obs": self._cursor.obs}

    def set_state(self, state: Dict[str, Any]) -> None:
        self._cursor.obs = state["obs"]

    def close(self) -> None:
        self.env.close()


@contract(
    reads=("collect_kwargs", "env_step", "env_episode"),
    writes=("episodes", "trajectories", "trajectory_end_idx", "episode_info", "env_step",
            "env_episode"),
    role=Role.COLLECTOR, emits=("episode_end",),
)
class EpisodeCollector:
    """Collect `cfg.policy.collect.n_episode` whole episodes per iteration into `ctx.episodes`.

    Each episode is a list of per-step dicts of one env (`obs`, `action`, `reward`, ...).
    Steps of episodes still running when the quota is reached are carried to the next call.
    """

    def __init__(self, cfg: Any, policy: Any, env: Any, random_collect_size: Optional[int] = None):
        self.policy = policy
        self.env = env
        self.n_episode = int(setting(cfg, "policy.collect.n_episode"))
        if self.n_episode <= 0:
            raise ValueError(f"policy.collect.n_episode must be positive, got {self.n_episode}")
        if random_collect_size is None:
            random_collect_size = setting(cfg, "policy.collect.random_collect_size", 0)
        self.random_collect_size = int(random_collect_size)
        self._cursor = _EnvCursor(env)
        self._open: List[List[Dict[str, Any]]] = [[] for _ in range(env.n_envs)]

    def __call__(self, ctx: OnlineRLContext):
        refresh = getattr(self.policy, "refresh", None)
        if refresh is not None:
            refresh()
        finished: List[List[Dict[str, Any]]] = []
        steps: List[Dict[str, Any]] = []
        while len(finished) < self.n_episode:
            obs = self._cursor.current()
            if ctx.env_step < self.random_collect_size:
                extras: Dict[str, Any] = {}
                action = _random_actions(self.env.action_space, self.env.n_envs)
            else:
                extras = self.policy.forward(obs, **ctx.collect_kwargs)
                action = extras["action"]
            result = self.env.step(action)
            record = _step_record(obs, action, extras, result)
            steps.append(record)
            self._cursor.obs = result.obs
            ctx.env_step += int(np.count_nonzero(result.valid))
            _count_episodes(ctx, result, len(steps))
            done = np.logical_or(result.terminated, result.truncated)
            for i in range(self.env.n_envs):
                if not result.valid[i]:
                    self._open[i] = []  # the env was restarted: its episode is gone
                    continue
                self._open[i].append(_row(record, i))
                if done[i]:
                    finished.append(self._open[i])
                    self._open[i] = []
        ctx.episodes = finished
        ctx.trajectories = steps


def _row(record: Dict[str, Any], i: int) -> Dict[str, Any]:
    return {k: _index(v, i) for k, v in record.items()}


def _index(value: Any, i: int) -> Any:
    if isinstance(value, dict):
        return {k: _index(v, i) for k, v in value.items()}
    return value[i]
