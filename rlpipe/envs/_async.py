"""Async mode: ``AsyncVectorEnv`` (one process per sub-env), rebuilt when a worker fails.

Each sub-env runs SAME_STEP inside a :class:`RecoveringEnv` in its worker, so an exception
restarts only that sub-env. A dead worker or a step over ``step_timeout`` cannot be recovered
inside an ``AsyncVectorEnv`` (it cannot step again after a worker failure): it is shut down and
rebuilt, and every row of that step is invalid.
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
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode
from gymnasium.vector.async_vector_env import AsyncState

from rlpipe.envs._actions import ActionCheck
from rlpipe.envs._errors import EnvFailureError
from rlpipe.envs._obs import BatchObs, copy_batch, to_batch
from rlpipe.envs._outcome import (
    FAILURE_MASK_KEY,
    NO_ROWS,
    Failure,
    Outcome,
    Rebuilding,
    failures_from_info,
    same_step_outcome,
)
from rlpipe.envs._recovery import MAX_CONSECUTIVE_FAILURES, SubEnvFactory
from rlpipe.envs._registry import EnvSource

# how long close() lets async workers shut down cleanly before terminating them
_CLOSE_GRACE_S = 5.0
# how long we wait, after a broken pipe, for the worker's process to be seen dead
_DEATH_WAIT_S = 0.5
# how long we wait for a hung worker to write its stack dump after SIGUSR1
_STACK_DUMP_WAIT_S = 1.0


class AsyncBackend(Rebuilding):
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
        self._vec: AsyncVectorEnv | None = None
        self._vec = self._build()
        self.single_observation_space = self._vec.single_observation_space
        self.single_action_space = self._vec.single_action_space
        self.batch_action_space = self._vec.action_space
        # Discrete actions are checked as a batch here (a bad one would otherwise kill a worker
        # and rebuild them all), then travel to the workers as Python ints (pickled ≈ 3x faster
        # than NumPy scalars): RecoveringEnv turns them back into this dtype, so the env gets
        # what a bare AsyncVectorEnv would give it
        check = ActionCheck(self.batch_action_space, n_envs)
        self._check_actions = check if check.fast else None
        space = self.single_action_space
        self._int_actions = space.dtype if isinstance(space, gym.spaces.Discrete) else None

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
        result, failure = self._async_call("reset", vec.reset_async, seed, vec.reset_wait)
        if failure is not None:
            obs, more = self._rebuild_and_reset()
            return obs, [failure, *more]
        obs, infos = result
        self.reset_infos = infos  # the manager reads action masks from it
        return copy_batch(to_batch(obs)), failures_from_info(infos, self.n_envs)[0]

    def step(self, actions: Any) -> Outcome:
        vec = self._vec
        if self._check_actions is not None:
            actions = self._check_actions(actions)
        elif len(actions) != self.n_envs:  # a caller's mistake, not a worker failure
            raise ValueError(
                f"EnvManager.step: expected {self.n_envs} actions (one per sub-env), "
                f"got {len(actions)}"
            )
        sent = actions
        int_dtype = self._int_actions
        if int_dtype is not None and type(actions) is np.ndarray and actions.dtype == int_dtype:
            sent = actions.tolist()
        result, failure = self._async_call("step", vec.step_async, sent, vec.step_wait)
        if failure is not None:
            return self._recover(failure)
        obs, reward, terminated, truncated, infos = result
        self._steps_since_rebuild += 1
        # copy=False: the shared-memory buffer is reused, so take our own copy
        obs = obs.copy() if type(obs) is np.ndarray else copy_batch(to_batch(obs))
        if "final_obs" in infos or FAILURE_MASK_KEY in infos:
            return same_step_outcome(obs, reward, terminated, truncated, infos, self.n_envs)
        # SAME_STEP workers add final_obs for every episode that ends: none ended, none failed
        return (obs, obs, reward.astype(np.float32), terminated, truncated, NO_ROWS, None, [],
                infos)

    # -- async failures -------------------------------------------------------------------------

    def _async_call(
        self, what: str, start: Callable[[Any], None], arg: Any, wait: Callable[..., Any]
    ) -> tuple[Any, Failure | None]:
        """``start(arg)`` then ``wait()``: (its result, None), or (None, the failure)."""
        try:
            start(arg)
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
                result, failure = self._async_call("reset", vec.reset_async, seeds, vec.reset_wait)
                if failure is not None:
                    raise EnvFailureError(f"{failure.what}\n{failure.text}")
            except Exception:  # noqa: BLE001 - collected and re-raised below
                errors.append(traceback.format_exc())
                continue
            obs, infos = result
            self.reset_infos = infos  # the manager reads action masks from it
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
