"""The ways to run ``n`` sub-envs, each normalised to one step contract.

Every backend's ``step`` returns an :class:`Outcome` with SAME_STEP semantics (``obs`` is what to
act from next, ``next_obs`` holds the true final observation of finished episodes) and reports
failures it recovered from; the manager does the bookkeeping common to all of them.

- ``AsyncBackend``: ``AsyncVectorEnv`` (one process per sub-env), autoreset SAME_STEP, each
  sub-env wrapped in :class:`RecoveringEnv` (in its worker) so an exception restarts only that
  sub-env. A dead worker or a step over ``step_timeout`` cannot be recovered inside an
  ``AsyncVectorEnv``: it is shut down and rebuilt, and every row is invalid.
- ``LoopBackend`` (in ``_loop``): sync mode, the sub-envs in a loop in this process.
- ``NativeBackend``: ``gymnasium.make_vec(id, vectorization_mode="vector_entry_point")``; a
  NEXT_STEP env gets its finished sub-envs reset right away (see ``_native``); an exception
  rebuilds it.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
from gymnasium.error import DependencyNotInstalled
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, VectorEnv
from gymnasium.vector.async_vector_env import AsyncState

from rlpipe.envs._errors import EnvFailureError, MissingDependencyError
from rlpipe.envs._native import partial_reset_for
from rlpipe.envs._obs import BatchObs, copy_batch, set_rows, to_batch
from rlpipe.envs._recovery import (
    FAILURE_COUNT_KEY,
    FAILURE_IN_STEP_KEY,
    FAILURE_KEY,
    MAX_CONSECUTIVE_FAILURES,
    SubEnvFactory,
    derive_seed,
)
from rlpipe.envs._registry import EnvSource, _install_hint

_NO_ROWS = np.zeros(0, dtype=np.int64)
_NO_FAILURES: tuple[list[Failure], None] = ([], None)
FAILURE_MASK_KEY = "_" + FAILURE_KEY  # gymnasium's per-env mask for an info key
# how long close() lets async workers shut down cleanly before terminating them
_CLOSE_GRACE_S = 5.0
# how long we wait, after a broken pipe, for the worker's process to be seen dead
_DEATH_WAIT_S = 0.5
# how long we wait for a hung worker to write its stack dump after SIGUSR1
_STACK_DUMP_WAIT_S = 1.0


@dataclass
class Failure:
    """One recovered failure: which sub-envs, what happened, the env's traceback."""

    env_ids: tuple[int, ...]
    what: str
    text: str
    count: int = 1


class Outcome(NamedTuple):
    """One normalised vector step (a tuple: this is built on every step)."""

    obs: BatchObs
    next_obs: BatchObs
    reward: np.ndarray  # float32
    terminated: np.ndarray
    truncated: np.ndarray
    done_rows: np.ndarray  # indices of rows whose episode ended (terminated or truncated)
    invalid: np.ndarray | None  # bool mask of rows that are not real transitions, or None
    failures: list[Failure]
    infos: dict[str, Any]


def same_step_outcome(
    obs: BatchObs, reward: Any, terminated: Any, truncated: Any, infos: dict[str, Any], n: int
) -> Outcome:
    """Outcome of a SAME_STEP vector step: final observations come from ``info["final_obs"]``."""
    done_rows = (terminated | truncated).nonzero()[0]
    next_obs = obs
    if done_rows.size:
        next_obs = copy_batch(obs)
        set_rows(next_obs, done_rows, infos["final_obs"][done_rows])
    failures, invalid = failures_from_info(infos, n) if FAILURE_MASK_KEY in infos else _NO_FAILURES
    return Outcome(
        obs, next_obs, reward.astype(np.float32), terminated, truncated, done_rows, invalid,
        failures, infos,
    )


def failures_from_info(infos: dict[str, Any], n: int) -> tuple[list[Failure], np.ndarray | None]:
    """Failures reported by :class:`RecoveringEnv`, and the rows whose step was not real."""
    mask = infos.get(FAILURE_MASK_KEY)
    if mask is None:
        return [], None
    in_step = infos[FAILURE_IN_STEP_KEY]
    failures = [
        Failure(
            (int(i),),
            f"sub-env {i} raised in {'step' if in_step[i] else 'reset'}() and was restarted",
            str(infos[FAILURE_KEY][i]),
            int(infos[FAILURE_COUNT_KEY][i]),
        )
        for i in np.flatnonzero(mask)
    ]
    invalid = np.logical_and(mask, in_step)
    return failures, (invalid if invalid.any() else None)


class _Rebuilding:
    """Whole-vector recovery shared by the async and native backends."""

    n_envs: int
    _seed: int | None
    _generation: int = 0
    _steps_since_rebuild: int = 0
    _consecutive_rebuilds: int = 0

    def _rebuild_and_reset(self) -> tuple[BatchObs, list[Failure]]:
        raise NotImplementedError

    def _recover(self, failure: Failure) -> Outcome:
        """Rebuild after ``failure``; every row becomes invalid (all episodes are dropped)."""
        if self._steps_since_rebuild == 0 and self._generation > 0:
            self._consecutive_rebuilds += 1
        else:
            self._consecutive_rebuilds = 1
        if self._consecutive_rebuilds > MAX_CONSECUTIVE_FAILURES:
            raise EnvFailureError(
                f"{failure.what}, {self._consecutive_rebuilds} times in a row right after being "
                f"rebuilt, so rebuilding does not help; fix the env (or the actions sent to "
                f"it). Last failure:\n{failure.text}"
            )
        obs, more = self._rebuild_and_reset()
        n = self.n_envs
        zeros = np.zeros(n, dtype=np.bool_)
        return Outcome(
            obs, obs, np.zeros(n, dtype=np.float32), zeros, zeros.copy(), _NO_ROWS,
            np.ones(n, dtype=np.bool_), [failure, *more], {},
        )

    def _rebuild_seeds(self) -> list[int | None] | None:
        if self._seed is None:
            return None
        return [derive_seed(self._seed, i, self._generation, 0) for i in range(self.n_envs)]


class AsyncBackend(_Rebuilding):
    """``AsyncVectorEnv`` over :class:`RecoveringEnv` sub-envs, rebuilt when a worker fails."""

    def __init__(
        self, source: EnvSource, n_envs: int, seed: int | None, step_timeout: float | None
    ) -> None:
        self._source = source
        self.n_envs = n_envs
        self._seed = seed
        self._timeout = step_timeout
        self._dump_dir = (
            tempfile.mkdtemp(prefix="rlpipe-env-stacks-")
            if step_timeout is not None and hasattr(signal, "SIGUSR1")
            else None
        )
        self._vec: VectorEnv | None = None
        self._vec = self._build()
        self.single_observation_space = self._vec.single_observation_space
        self.single_action_space = self._vec.single_action_space
        self.batch_action_space = self._vec.action_space

    def _build(self) -> AsyncVectorEnv:
        fns = [
            SubEnvFactory(
                self._source, i, self._seed, self._generation,
                None if self._dump_dir is None else os.path.join(self._dump_dir, f"env-{i}.txt"),
                os.getpid(),
            )
            for i in range(self.n_envs)
        ]
        return AsyncVectorEnv(fns, copy=False, autoreset_mode=AutoresetMode.SAME_STEP)

    def reset(self, seed: int | list[int | None] | None) -> tuple[BatchObs, list[Failure]]:
        vec = self._vec
        result, failure = self._async_call("reset", lambda: vec.reset_async(seed=seed), vec.reset_wait)
        if failure is not None:
            obs, more = self._rebuild_and_reset()
            return obs, [failure, *more]
        obs, infos = result
        return copy_batch(to_batch(obs)), failures_from_info(infos, self.n_envs)[0]

    def step(self, actions: Any) -> Outcome:
        vec = self._vec
        if len(actions) != self.n_envs:  # a caller's mistake, not a worker failure
            raise ValueError(
                f"EnvManager.step: expected {self.n_envs} actions (one per sub-env), "
                f"got {len(actions)}"
            )
        result, failure = self._async_call("step", lambda: vec.step_async(actions), vec.step_wait)
        if failure is not None:
            return self._recover(failure)
        obs, reward, terminated, truncated, infos = result
        self._steps_since_rebuild += 1
        # copy=False: the shared-memory buffer is reused, so take our own copy
        obs = obs.copy() if type(obs) is np.ndarray else copy_batch(to_batch(obs))
        return same_step_outcome(obs, reward, terminated, truncated, infos, self.n_envs)

    # -- async failures -------------------------------------------------------------------------

    def _async_call(
        self, what: str, start: Callable[[], None], wait: Callable[..., Any]
    ) -> tuple[Any, Failure | None]:
        try:
            start()
        except OSError:  # BrokenPipeError & co: a worker is already gone
            return None, self._crash_failure(what)
        try:
            return wait(timeout=self._timeout), None
        except multiprocessing.TimeoutError:
            return None, self._timeout_failure(what)
        except EnvFailureError:
            raise  # a sub-env gave up restarting itself (its tracebacks are in the message)
        except Exception:  # noqa: BLE001 - any worker-side error: the AsyncVectorEnv is unusable
            return None, self._crash_failure(what)

    def _crash_failure(self, what: str) -> Failure:
        procs = self._vec.processes
        # a pipe reports EOF a moment before its process can be reaped: give it that moment
        ended = multiprocessing.connection.wait([p.sentinel for p in procs], timeout=_DEATH_WAIT_S)
        for p in procs:
            if p.sentinel in ended:
                p.join(_DEATH_WAIT_S)
        dead = [i for i, p in enumerate(procs) if not p.is_alive()]
        states = "; ".join(f"worker {i} exit code {procs[i].exitcode}" for i in dead)
        text = traceback.format_exc()
        return Failure(
            tuple(dead) or tuple(range(self.n_envs)),
            f"async {what}() failed ({states or 'worker raised'}); all sub-envs were rebuilt",
            text,
        )

    def _timeout_failure(self, what: str) -> Failure:
        hung = [i for i, pipe in enumerate(self._vec.parent_pipes) if not _has_reply(pipe)]
        return Failure(
            tuple(hung),
            f"sub-env(s) {hung} did not finish {what}() within step_timeout={self._timeout} s; "
            f"all sub-envs were rebuilt",
            self._stack_dumps(hung),
        )

    def _stack_dumps(self, hung: list[int]) -> str:
        if self._dump_dir is None:
            return "(no stack dump: SIGUSR1 is not available on this platform)"
        for i in hung:
            try:
                os.kill(self._vec.processes[i].pid, signal.SIGUSR1)
            except (ProcessLookupError, TypeError):
                pass
        deadline = time.monotonic() + _STACK_DUMP_WAIT_S
        parts = []
        for i in hung:
            text = _read_when_stable(os.path.join(self._dump_dir, f"env-{i}.txt"), deadline)
            parts.append(f"stack of hung sub-env {i}:\n{text or '(no dump received)'}")
        return "\n".join(parts)

    def _rebuild_and_reset(self) -> tuple[BatchObs, list[Failure]]:
        errors = []
        for _ in range(MAX_CONSECUTIVE_FAILURES):
            self._shutdown(grace=0.0)  # after a failure: do not wait for broken workers
            self._generation += 1
            self._steps_since_rebuild = 0
            try:
                self._vec = self._build()
                vec = self._vec
                seeds = self._rebuild_seeds()
                result, failure = self._async_call(
                    "reset", lambda: vec.reset_async(seed=seeds), vec.reset_wait
                )
                if failure is not None:
                    raise EnvFailureError(f"{failure.what}\n{failure.text}")
            except Exception:  # noqa: BLE001 - collected and re-raised below
                errors.append(traceback.format_exc())
                continue
            obs, infos = result
            return copy_batch(to_batch(obs)), failures_from_info(infos, self.n_envs)[0]
        raise EnvFailureError(
            f"could not rebuild the async vector env after {len(errors)} attempts:\n"
            + "\n".join(errors)
        )

    def _shutdown(self, grace: float = _CLOSE_GRACE_S) -> None:
        vec, self._vec = self._vec, None
        if vec is not None:
            shutdown_async(vec, grace)

    def close(self) -> None:
        try:
            self._shutdown()
        finally:
            if self._dump_dir is not None:
                shutil.rmtree(self._dump_dir, ignore_errors=True)


class NativeBackend(_Rebuilding):
    """A vector entry point env (``gymnasium.make_vec(..., "vector_entry_point")``)."""

    def __init__(self, source: EnvSource, n_envs: int, seed: int | None) -> None:
        self._source = source
        self.n_envs = n_envs
        self._seed = seed
        self._vec: VectorEnv | None = self._build()
        self.single_observation_space = self._vec.single_observation_space
        self.single_action_space = self._vec.single_action_space
        self.batch_action_space = self._vec.action_space

    def _build(self) -> VectorEnv:
        try:
            vec = gym.make_vec(
                self._source.gym_id, num_envs=self.n_envs,
                vectorization_mode="vector_entry_point", **self._source.kwargs,
            )
        except DependencyNotInstalled as exc:
            raise MissingDependencyError(_install_hint(self._source, exc)) from exc
        self._partial, self._fresh = partial_reset_for(vec)
        return vec

    def reset(self, seed: int | None) -> tuple[BatchObs, list[Failure]]:
        try:
            obs, _ = self._vec.reset(seed=seed)
        except Exception:  # noqa: BLE001 - the env raised: rebuild it
            failure = Failure(tuple(range(self.n_envs)), "the native vector env raised in reset()",
                              traceback.format_exc())
            obs, more = self._rebuild_and_reset()
            return obs, [failure, *more]
        return copy_batch(to_batch(obs)), []

    def step(self, actions: Any) -> Outcome:
        try:
            obs, reward, terminated, truncated, infos = self._vec.step(actions)
            obs = to_batch(obs)
            if not self._fresh:
                obs = copy_batch(obs)
            if self._partial is None:
                out = same_step_outcome(obs, reward, terminated, truncated, infos, self.n_envs)
            else:
                done = terminated | truncated
                done_rows = done.nonzero()[0]
                next_obs = obs
                if done_rows.size:  # reset those sub-envs now: no pseudo-step comes next
                    obs = self._partial(self._vec, done, next_obs)
                out = Outcome(
                    obs, next_obs, reward.astype(np.float32, copy=False), terminated, truncated,
                    done_rows, None, [], infos,
                )
        except EnvFailureError:
            raise
        except Exception:  # noqa: BLE001 - the env raised: rebuild it
            return self._recover(Failure(
                tuple(range(self.n_envs)), "the native vector env raised in step() and was rebuilt",
                traceback.format_exc(),
            ))
        self._steps_since_rebuild += 1
        return out

    def _rebuild_and_reset(self) -> tuple[BatchObs, list[Failure]]:
        errors = []
        for _ in range(MAX_CONSECUTIVE_FAILURES):
            self._shutdown()
            self._generation += 1
            self._steps_since_rebuild = 0
            try:
                self._vec = self._build()
                seeds = self._rebuild_seeds()
                obs, _ = self._vec.reset(seed=None if seeds is None else seeds[0])
            except Exception:  # noqa: BLE001 - collected and re-raised below
                errors.append(traceback.format_exc())
                continue
            return copy_batch(to_batch(obs)), []
        raise EnvFailureError(
            f"could not rebuild the native vector env after {len(errors)} attempts:\n"
            + "\n".join(errors)
        )

    def _shutdown(self) -> None:
        vec, self._vec = self._vec, None
        if vec is not None:
            try:
                vec.close()
            except Exception:  # noqa: BLE001 - closing a broken env; nothing more to do
                pass

    def close(self) -> None:
        self._shutdown()


def _has_reply(pipe: Any) -> bool:
    if pipe is None:
        return True  # gymnasium closed it after that worker reported an error
    try:
        return bool(pipe.poll(0))
    except (OSError, EOFError):
        return True


def _read_when_stable(path: str, deadline: float) -> str:
    """Read a file another process is writing, once its size has stopped growing."""
    last = -1
    while time.monotonic() < deadline:
        size = os.path.getsize(path) if os.path.exists(path) else 0
        if size > 0 and size == last:
            break
        last = size
        time.sleep(0.02)
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def shutdown_async(vec: AsyncVectorEnv, grace: float) -> None:
    """Close an AsyncVectorEnv in any state (healthy, failed, mid-call) leaving no process.

    A healthy one is asked to close (sub-envs run their ``close()``) and given ``grace`` seconds;
    anything still alive is terminated, then killed. ``AsyncVectorEnv.close()`` itself can hang
    or raise after a worker failure, so we do not rely on it.
    """
    procs = list(getattr(vec, "processes", []))
    pipes = list(getattr(vec, "parent_pipes", []))
    deadline = time.monotonic() + grace
    idle = getattr(vec, "_state", None) == AsyncState.DEFAULT
    healthy = all(p.is_alive() for p in procs) and all(pipe is not None for pipe in pipes)
    if grace > 0 and idle and healthy:
        try:
            for pipe in pipes:
                pipe.send(("close", None))
            for pipe in pipes:
                if pipe.poll(max(0.0, deadline - time.monotonic())):
                    pipe.recv()
        except (OSError, EOFError):
            pass
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(1.0)
        if p.is_alive():
            p.kill()
            p.join()
    for pipe in pipes:
        if pipe is not None:
            pipe.close()
    queue = getattr(vec, "error_queue", None)
    if queue is not None:
        queue.close()
        queue.join_thread()
    vec.closed = True
