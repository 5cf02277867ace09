"""Sync mode: the sub-envs stepped in a plain loop in this process.

This does what ``gymnasium.vector.SyncVectorEnv(autoreset_mode=SAME_STEP)`` does — same
sub-env calls in the same order, ``info`` merged with gymnasium's own helper — but builds our
step result directly, and catches each sub-env's exceptions inline (restarting only that
sub-env through its :class:`RecoveringEnv`). ``SyncVectorEnv`` spends a third of a CartPole
step on generic batching and copies that we would then redo; this loop is why the manager keeps
up with a bare ``SyncVectorEnv`` (see benchmarks/env_throughput.py).
"""

from __future__ import annotations

import traceback
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space, iterate

from rlpipe.envs._actions import ActionCheck
from rlpipe.envs._obs import BatchObs, BatchStacker, copy_batch, set_rows
from rlpipe.envs._outcome import Failure, Outcome, failures_from_info
from rlpipe.envs._recovery import FAILURE_KEY, SubEnvFactory, derive_seed
from rlpipe.envs._registry import EnvSource

_INDEXABLE_ACTIONS = (spaces.Discrete, spaces.Box, spaces.MultiDiscrete, spaces.MultiBinary)


class _InfoMerger(VectorEnv):
    """Only for gymnasium's ``VectorEnv._add_info`` (per-key arrays plus ``_key`` masks)."""

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs


_RESUMED = 2**31 - 1  # derive_seed key of an env restarted after a resume (restarts count from 1)


class LoopBackend:
    """``n_envs`` :class:`RecoveringEnv` sub-envs in this process, SAME_STEP autoreset."""

    def __init__(self, source: EnvSource, n_envs: int, seed: int | None) -> None:
        self.n_envs = n_envs
        self._subs = [SubEnvFactory(source, i, seed)() for i in range(n_envs)]
        self._inner = [sub.env for sub in self._subs]  # stepped directly: no wrapper frame
        first = self._subs[0]
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        for i, sub in enumerate(self._subs[1:], 1):
            if sub.observation_space != self.single_observation_space:
                raise RuntimeError(
                    f"sub-env {i} has observation space {sub.observation_space}, sub-env 0 has "
                    f"{self.single_observation_space}; every sub-env must have the same spaces"
                )
            if sub.action_space != self.single_action_space:
                raise RuntimeError(
                    f"sub-env {i} has action space {sub.action_space}, sub-env 0 has "
                    f"{self.single_action_space}; every sub-env must have the same spaces"
                )
        self.batch_action_space = batch_space(self.single_action_space, n_envs)
        # Discrete actions are checked as a batch before any sub-env steps; others by each env
        check = ActionCheck(self.batch_action_space, n_envs)
        self._check_actions = check if check.fast else None
        obs_space = self.single_observation_space
        self._flat_obs = isinstance(obs_space, spaces.Box)
        self._obs_shape = (n_envs, *obs_space.shape) if self._flat_obs else ()
        self._obs_dtype = obs_space.dtype
        self._stack_nested = BatchStacker(obs_space, n_envs)  # Dict/Tuple observations
        self._indexable_actions = isinstance(self.single_action_space, _INDEXABLE_ACTIONS)
        self._infos = _InfoMerger(n_envs)
        self._recovering: set[int] = set()  # sub-envs restarted and not yet stepped since
        self._unreset: set[int] = set()  # restored without their simulation: reset, not stepped

    def restart_all_at_next_step(self) -> None:
        """The sub-envs were restored as fresh, never reset envs (their simulation could not be
        saved): the next `step` resets each instead of stepping it, its row not a transition
        (`invalid`), without counting it as a failure."""
        self._unreset = set(range(self.n_envs))

    def reset(self, seed: int | list[int | None] | None) -> tuple[BatchObs, list[Failure]]:
        seeds = [seed + i for i in range(self.n_envs)] if isinstance(seed, int) else seed
        seeds = seeds if seeds is not None else [None] * self.n_envs
        obs_list, infos = [], {}
        for i, (sub, env_seed) in enumerate(zip(self._subs, seeds)):
            obs, info = sub.reset(seed=env_seed)  # through the wrapper: it recovers failures
            self._inner[i] = sub.env
            obs_list.append(obs)
            if info:
                infos = self._infos._add_info(infos, info, i)
        failures, _ = failures_from_info(infos, self.n_envs)
        self._recovering.update(j for f in failures for j in f.env_ids)
        self.reset_infos = infos  # the manager reads action masks from it
        return self._stack(obs_list), failures

    def step(self, actions: Any) -> Outcome:
        n = self.n_envs
        if self._check_actions is not None:
            actions = self._check_actions(actions)
        elif not self._indexable_actions:
            actions = list(iterate(self.batch_action_space, actions))
        elif len(actions) != n:
            raise ValueError(
                f"EnvManager.step: expected {n} actions (one per sub-env), got {len(actions)}"
            )
        obs_list, rewards, terminated, truncated = [], [], [], []
        infos: dict[str, Any] = {}
        done_rows, finals = [], []
        invalid = None
        inner = self._inner
        for i in range(n):
            if self._unreset and i in self._unreset:
                self._unreset.discard(i)
                sub = self._subs[i]
                obs, info = sub.reset(seed=derive_seed(sub._seed, i, sub._generation, _RESUMED))
                inner[i] = sub.env
                reward, term, trunc = 0.0, False, False
                invalid = np.zeros(n, dtype=np.bool_) if invalid is None else invalid
                invalid[i] = True
                obs_list.append(obs)
                rewards.append(reward)
                terminated.append(term)
                truncated.append(trunc)
                if info:
                    infos = self._infos._add_info(infos, info, i)
                continue
            try:
                obs, reward, term, trunc, info = inner[i].step(actions[i])
            except Exception:  # noqa: BLE001 - the sub-env crashed: restart only it
                obs, info = self._subs[i].restart(traceback.format_exc(), in_step=True)
                inner[i] = self._subs[i].env
                self._recovering.add(i)
                reward, term, trunc = 0.0, False, False
                invalid = np.zeros(n, dtype=np.bool_) if invalid is None else invalid
                invalid[i] = True
            else:
                if self._recovering and i in self._recovering:
                    self._recovering.discard(i)
                    self._subs[i]._consecutive_failures = 0
                if term or trunc:
                    done_rows.append(i)
                    finals.append(obs)
                    infos = self._infos._add_info(infos, {"final_obs": obs, "final_info": info}, i)
                    obs, info = self._subs[i].reset()  # through the wrapper: recovers failures
                    if FAILURE_KEY in info:
                        inner[i] = self._subs[i].env
                        self._recovering.add(i)
            obs_list.append(obs)
            rewards.append(reward)
            terminated.append(term)
            truncated.append(trunc)
            if info:
                infos = self._infos._add_info(infos, info, i)
        obs = self._stack(obs_list)
        next_obs = obs
        rows = np.array(done_rows, dtype=np.int64)
        if done_rows:
            next_obs = copy_batch(obs)
            set_rows(next_obs, rows, finals)
        failures = failures_from_info(infos, n)[0] if FAILURE_KEY in infos else []
        return (
            obs, next_obs, np.array(rewards, dtype=np.float32),
            np.array(terminated, dtype=np.bool_), np.array(truncated, dtype=np.bool_),
            rows, invalid, failures, infos,
        )

    def _stack(self, obs_list: list[Any]) -> BatchObs:
        if self._flat_obs:  # into the space's dtype, as SyncVectorEnv does
            return np.stack(obs_list, out=np.empty(self._obs_shape, self._obs_dtype))
        return self._stack_nested(obs_list)

    def close(self) -> None:
        errors = []
        for sub in self._subs:
            try:
                sub.close()
            except Exception:  # noqa: BLE001 - close the others, then report
                errors.append(traceback.format_exc())
        self._subs, self._inner = [], []
        if errors:
            raise RuntimeError("closing sub-envs failed:\n" + "\n".join(errors))
