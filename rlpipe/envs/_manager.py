"""EnvManager: n copies of an environment behind one batched, crash-tolerant step()."""

from __future__ import annotations

import atexit
import logging
import os
import pickle
import weakref
from dataclasses import dataclass, field
from typing import Any, Literal

import gymnasium as gym
import numpy as np

from rlpipe.envs._async import AsyncBackend
from rlpipe.envs._atari_lives import game_scores, is_atari_short_name
from rlpipe.envs._envpool import EnvPoolBackend, auto_picks_envpool
from rlpipe.envs._errors import EnvFailureError
from rlpipe.envs._loop import LoopBackend
from rlpipe.envs._masks import MaskFn, MaskSource, load_mask_fn
from rlpipe.envs._native import NativeBackend, native_is_known_good
from rlpipe.envs._obs import BatchObs, check_space
from rlpipe.envs._outcome import Failure
from rlpipe.envs._registry import EnvFactory, resolve_env
from rlpipe.envs._restarts import RestartBudget
from rlpipe.envs._state_pickle import dumps_state, restart_unsaved_envs

__all__ = ["EnvManager", "StepResult"]

log = logging.getLogger("rlpipe.envs")

Mode = Literal["auto", "sync", "async", "native", "envpool"]
_MODES = ("auto", "sync", "async", "native", "envpool")
# Below this many sub-envs a native vector env is slower than our loop over single envs
# (CartPole-v1, benchmarks/env_throughput.py: native/sync = 0.3 at 1 env, 0.75 at 4, 1.0 at 6).
AUTO_NATIVE_MIN_ENVS = 8


@dataclass(slots=True)
class StepResult:
    """One batched step; every array has leading dim ``n_envs``. Treat the arrays as read-only.

    - ``obs``: the observation to act from next. Where an episode ended it is already the new
      episode's first observation.
    - ``next_obs``: the true next observation of this transition: equal to ``obs`` where the
      episode goes on (it may be the same array object), the true final observation where it
      ended. Bootstrap truncated episodes from it.
    - ``reward`` float32, ``terminated`` / ``truncated`` bool (gymnasium's meaning).
    - ``valid`` bool: False for a row that is not a real transition (its env was restarted after
      a crash or timeout; ``obs`` there is the fresh env's first observation, ``reward`` 0,
      ``terminated``/``truncated`` False). Drop those rows. Read-only.
    - ``episodes``: ``{"env_id", "return", "length"}`` for each episode that ended in this step.
    - ``infos``: the underlying vector env's info dict, as it gave it.
    - ``action_mask``: bool ``[n_envs, n_actions]``, the valid actions in ``obs`` (None: the env
      gives no masks); ``next_action_mask``: those of ``next_obs`` (at a truncated episode's end
      the final observation's; at a terminal one possibly all True, unused). See ``_masks``.
    """

    obs: BatchObs
    next_obs: BatchObs
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    valid: np.ndarray
    episodes: list[dict[str, Any]] = field(default_factory=list)
    infos: dict[str, Any] = field(default_factory=dict)
    action_mask: np.ndarray | None = None
    next_action_mask: np.ndarray | None = None


class EnvManager:
    """``n_envs`` copies of an environment, stepped together, with final-obs handling and recovery.

    Args:
        env: a gymnasium id (``"CartPole-v1"``), a short name registered with
            :func:`register_env` (``"cartpole"``), or a zero-argument factory returning a
            ``gymnasium.Env`` (called with ``env_kwargs`` if given).
        n_envs: number of sub-envs.
        seed: sub-env ``i`` is reset with ``seed + i`` on the first :meth:`reset`, so one seed
            gives one observation stream; ``action_space`` and ``batch_action_space`` are seeded
            with it too. ``None``: unseeded.
        mode: ``"sync"`` (the sub-envs in a loop in this process, ``SyncVectorEnv``
            semantics), ``"async"`` (one subprocess per sub-env, ``AsyncVectorEnv``),
            ``"native"`` (the id's own vectorised implementation,
            ``gymnasium.make_vec(id, vectorization_mode="vector_entry_point")``), ``"envpool"``
            (Atari games in EnvPool, DQN-preprocessed frames; see ``_envpool``), or
            ``"auto"``: envpool for an ``"atari-*"`` short name when EnvPool is installed,
            async for one when it is not (with more than one env and core), native when the
            id ships a vector entry point we can normalise and ``n_envs >= 8`` (below that the
            sync loop is faster), else sync.
        step_timeout: seconds a step (or reset) may take before it counts as a failure. Only
            mode ``"async"`` can enforce it — a step running in this process cannot be stopped
            safely — so other modes raise ``ValueError`` if it is set.
        max_restarts: recovered failures (restarts) allowed within ``restart_window`` steps;
            one more raises :class:`EnvFailureError` naming the env and its last traceback.
            ``0``: the first failure ends the run.
        restart_window: the window, in steps of this manager (batched ``step()`` calls), over
            which restarts are counted: an env that crashes now and then runs on, one that
            crashes more than ``max_restarts`` times within any ``restart_window`` steps stops
            the run. ``None``: restarts are counted over the manager's whole life.
        env_kwargs: keyword arguments for ``gymnasium.make`` / the factory (merged over a short
            name's registered ones).
        action_mask_fn: ``fn(obs, infos) -> bool [n_envs, n_actions]`` (or a ``"module:fn"``
            string) giving the valid actions of the batched ``obs``; without it the mask comes
            from a Dict observation's ``"action_mask"`` key or ``info["action_mask"]``.
        action_masks: False ignores every mask source (``action_mask`` stays None).

    After :meth:`reset` and each :meth:`step`, :attr:`action_mask` is the mask to act from
    (None when the env gives none); a mask row with no valid action raises ``ValueError``
    naming the env and the step.

    A sub-env that raises in ``step``/``reset`` is rebuilt and reset (its row is ``valid=False``
    and its episode is dropped; the others go on). In async mode a dead worker or a timeout
    rebuilds the whole ``AsyncVectorEnv`` (every row invalid); in native mode an exception
    rebuilds the native env. Each recovery logs a warning on the ``"rlpipe.envs"`` logger with
    the env's traceback and adds to :attr:`restarts`.
    """

    def __init__(
        self,
        env: str | EnvFactory,
        n_envs: int = 1,
        seed: int | None = None,
        mode: Mode = "auto",
        step_timeout: float | None = None,
        max_restarts: int = 100,
        env_kwargs: dict[str, Any] | None = None,
        restart_window: int | None = None,
        action_mask_fn: MaskFn | str | None = None,
        action_masks: bool = True,
    ) -> None:
        self._closed = True  # until fully built, so close()/__del__ are safe on early errors
        _check_args(n_envs, seed, mode, step_timeout)
        budget = RestartBudget(max_restarts, restart_window)
        source = resolve_env(env, env_kwargs)
        self.mode: str = resolve_mode(mode, source, n_envs)
        if step_timeout is not None and self.mode != "async":
            raise ValueError(
                f"EnvManager(step_timeout={step_timeout}, mode={mode!r}): a step timeout needs "
                f"mode='async'. In modes sync and native the step runs in this process and cannot "
                f"be interrupted safely; use mode='async' to time out hanging envs."
            )
        self.env_label = source.label
        self.n_envs = n_envs
        self.seed = seed
        self.step_timeout = step_timeout
        self.max_restarts = max_restarts
        self.restart_window = restart_window
        self.restarts = 0  # over the manager's life
        self._budget = budget
        self._backend: LoopBackend | AsyncBackend | NativeBackend | EnvPoolBackend
        if self.mode == "envpool":
            self._backend = EnvPoolBackend(source, n_envs, seed)
        elif self.mode == "native":
            self._backend = NativeBackend(source, n_envs, seed)
        elif self.mode == "async":
            self._backend = AsyncBackend(source, n_envs, seed, step_timeout)
        else:
            self._backend = LoopBackend(source, n_envs, seed)
        self._closed = False
        _OPEN.add(self)
        try:
            self.observation_space: gym.Space = self._backend.single_observation_space
            self.action_space: gym.Space = self._backend.single_action_space
            check_space(self.observation_space, "observation space")
            check_space(self.action_space, "action space")
            if seed is not None:  # so random actions (warm-up, tests) are reproducible too
                self.action_space.seed(seed)
                self.batch_action_space.seed(seed)
        except Exception:
            self.close()
            raise
        self._masks = MaskSource(self.env_label, self.observation_space, self.action_space,
                                 n_envs, load_mask_fn(action_mask_fn), bool(action_masks))
        self.action_mask: np.ndarray | None = None
        self._ep_return = np.zeros(n_envs, dtype=np.float64)  # return so far, per sub-env
        # Atari may clip rewards and end transitions at lost lives ("train" preset): episodes
        # report the game's score over whole games instead (_atari_lives.game_scores)
        self._games = self.mode == "envpool" or is_atari_short_name(source)
        self._t = 0  # steps taken by this manager
        # value of _t when each episode began (a list: a few rows are read and set faster in Python)
        self._ep_start: list[int] = [0] * n_envs
        self._needs_reset = True
        self._reset_count = 0
        self._all_valid = np.ones(n_envs, dtype=np.bool_)
        self._all_valid.flags.writeable = False  # shared by every step without a failure

    @property
    def batch_action_space(self) -> gym.Space:
        """The batched action space (``sample()`` gives one action per sub-env)."""
        return self._backend.batch_action_space

    @property
    def closed(self) -> bool:
        return self._closed

    def reset(self, seed: int | None = None) -> BatchObs:
        """Reset every sub-env and return the batched first observations.

        The first reset uses the constructor's ``seed``; later ones continue the sub-envs' random
        streams unless ``seed`` is given.
        """
        self._check_open("reset")
        if seed is None and self._reset_count == 0:
            seed = self.seed
        try:
            obs, failures = self._backend.reset(seed)
        except EnvFailureError as err:
            raise self._named(err) from err
        self._reset_count += 1
        self._ep_return[:] = 0.0
        self._ep_start = [self._t] * self.n_envs
        self._needs_reset = False
        self._record(failures)
        infos = getattr(self._backend, "reset_infos", None) or {}
        self.action_mask = self._masks.current(obs, infos, self._t)
        return obs

    def step(self, actions: Any) -> StepResult:
        """Step every sub-env with ``actions`` (leading dim ``n_envs``); see :class:`StepResult`."""
        if self._needs_reset:
            self._check_open("step")
            raise RuntimeError("EnvManager.step() called before reset(); call reset() first")
        try:
            obs, next_obs, reward, terminated, truncated, rows, invalid, failures, infos = (
                self._backend.step(actions)
            )
        except EnvFailureError as err:
            raise self._named(err) from err
        ep_return = self._ep_return
        if self._games:
            score, rows = game_scores(reward, truncated, infos, rows)
        ep_return += score if self._games else reward
        self._t = t = self._t + 1
        episodes = []
        if rows.size:  # row by row: for the few rows that end per step, faster than fancy indexing
            ep_start = self._ep_start
            for i in rows.tolist():
                episodes.append(
                    {"env_id": i, "return": ep_return.item(i), "length": t - ep_start[i]}
                )
                ep_return[i] = 0.0
                ep_start[i] = t
        valid = self._all_valid
        if invalid is not None:
            valid = ~invalid
            ep_return[invalid] = 0.0
            for i in invalid.nonzero()[0].tolist():
                self._ep_start[i] = t
        if failures:
            self._record(failures)
        mask = next_mask = None
        if self._masks.enabled and (self.action_mask is not None or self._masks.fn is not None
                                    or self._masks.from_obs):
            mask = self._masks.current(obs, infos, t)
            next_mask = self._masks.next(next_obs, infos, rows, mask)
        self.action_mask = mask
        return StepResult(obs, next_obs, reward, terminated, truncated, valid, episodes, infos,
                          mask, next_mask)

    def _named(self, err: EnvFailureError) -> EnvFailureError:
        """`err` with this manager's env label (a backend's error does not know it)."""
        if err.env_label is not None:
            return err
        return EnvFailureError(f"env {self.env_label}: {err}", env_label=self.env_label,
                               last_traceback=err.last_traceback)

    def recent_restarts(self) -> int:
        """Restarts counted against ``max_restarts``: those of the last ``restart_window``
        steps (all of them when the window is None)."""
        return self._budget.recent(self._t)

    def _record(self, failures: list[Failure]) -> None:
        for failure in failures:
            self.restarts += failure.count
        self._budget.record(failures, self._t, self.env_label)

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise RuntimeError(f"EnvManager.{what}() called after close()")

    _BOOKKEEPING = ("_ep_return", "_t", "_ep_start", "_needs_reset", "_reset_count", "restarts",
                    "_budget", "action_mask")

    def get_state(self) -> bytes:
        """The whole simulation state (sub-envs, their RNGs, episode bookkeeping, the action
        space's RNG) as pickle bytes, for an exact resume of a run in sync or native mode.

        Only restore states you wrote yourself: unpickling runs code. Async subprocess envs
        cannot be captured (`NotImplementedError`); a resumed async run re-seeds its envs.
        """
        self._check_open("get_state")
        if self.mode == "envpool":
            raise NotImplementedError(
                "EnvManager.get_state(): EnvPool cannot snapshot its envs, so mode='envpool' "
                "has no exact resume; a resumed run re-seeds them (use mode='sync' for one)")
        if self.mode == "async":
            raise NotImplementedError(
                "EnvManager.get_state(): envs in async subprocesses cannot be captured; a resumed "
                "run re-seeds them instead (use mode='sync' or 'native' for an exact resume)")
        manager = {name: getattr(self, name) for name in self._BOOKKEEPING}
        manager["action_space"] = self.action_space
        return dumps_state({"mode": self.mode, "n_envs": self.n_envs, "manager": manager,
                            "backend": self._backend.__dict__})

    def set_state(self, state: bytes) -> None:
        """Restore a state from `get_state()` of a manager built the same way (env, mode, n_envs)."""
        self._check_open("set_state")
        loaded = pickle.loads(state)  # noqa: S301 - a state this process family wrote
        if (loaded["mode"], loaded["n_envs"]) != (self.mode, self.n_envs):
            raise ValueError(
                f"EnvManager.set_state(): the state is of {loaded['n_envs']} envs in mode "
                f"{loaded['mode']!r}, this manager has {self.n_envs} in mode {self.mode!r}; "
                f"build the manager with the run's original env settings")
        self._backend.close()
        restore = getattr(self._backend, "restore", None)  # native: also states of older versions
        if restore is not None:
            restore(loaded["backend"])
        else:
            self._backend.__dict__.update(loaded["backend"])
        restart_unsaved_envs(loaded, self._backend, f"{self.env_label} in mode {self.mode!r}")
        manager = loaded["manager"]
        self.action_space = manager.pop("action_space")
        for name, value in manager.items():
            setattr(self, name, value)
        self._ep_start = [int(s) for s in self._ep_start]  # states written before it was a list

    def close(self) -> None:
        """Close every sub-env and worker process. Safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        self._needs_reset = True
        _OPEN.discard(self)
        self._backend.close()

    def __enter__(self) -> EnvManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            try:
                self.close()
            except Exception:  # noqa: BLE001 - best effort at garbage collection
                pass

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"restarts={self.restarts}"
        return f"EnvManager({self.env_label}, n_envs={self.n_envs}, mode={self.mode!r}, {state})"


def _check_args(
    n_envs: int, seed: int | None, mode: str, step_timeout: float | None
) -> None:
    if not isinstance(n_envs, (int, np.integer)) or isinstance(n_envs, bool) or n_envs < 1:
        raise ValueError(f"EnvManager: n_envs must be a positive int, got {n_envs!r}")
    if seed is not None and (not isinstance(seed, (int, np.integer)) or seed < 0):
        raise ValueError(f"EnvManager: seed must be None or an int >= 0, got {seed!r}")
    if mode not in _MODES:
        raise ValueError(f"EnvManager: mode must be one of {_MODES}, got {mode!r}")
    if step_timeout is not None and not step_timeout > 0:
        raise ValueError(
            f"EnvManager: step_timeout must be None or > 0 seconds, got {step_timeout!r}"
        )


def _atari_frames_in_processes(source: Any, n_envs: int) -> bool:
    """Mode "auto" without EnvPool runs an `atari-*` short name's ale-py frames one process per
    env (mode "async") where there are several envs and cores: an emulated and preprocessed
    step costs about 0.7-2 ms, far more than handing a frame between processes, and the
    main process is left to act and learn. Such envs, as EnvPool's, have no exact resume."""
    return is_atari_short_name(source) and n_envs > 1 and (os.cpu_count() or 1) > 1


def resolve_mode(mode: str, source: Any, n_envs: int) -> str:
    """The mode an `EnvManager` of `n_envs` copies of `source` (a resolved env) runs in, with
    "auto" decided (see `EnvManager`'s `mode`)."""
    if mode == "auto" and auto_picks_envpool(source):
        return "envpool"
    if mode == "auto" and _atari_frames_in_processes(source, n_envs):
        return "async"
    gym_id = source.gym_id
    if mode == "auto":
        native = n_envs >= AUTO_NATIVE_MIN_ENVS and gym_id is not None
        return "native" if native and native_is_known_good(gym_id) else "sync"
    if mode == "native":
        if gym_id is None:
            raise ValueError(
                "EnvManager(mode='native') needs a gymnasium id (or a short name for one); an env "
                "factory can only run in mode 'sync' or 'async'"
            )
        if gym.spec(gym_id).vector_entry_point is None:
            raise ValueError(
                f"EnvManager(mode='native'): {gym_id!r} has no vector entry point (no native "
                f"vectorised implementation); use mode='sync' or 'async'"
            )
    return mode


_OPEN: weakref.WeakSet[EnvManager] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """Safety net: close managers the program forgot, so no worker process outlives it."""
    for manager in list(_OPEN):
        try:
            manager.close()
        except Exception:  # noqa: BLE001 - at exit, keep closing the others
            log.exception("closing %r at exit failed", manager)
