"""Per-env crash recovery: a wrapper that catches an env's exception, rebuilds the env, resets it
and reports the failure through ``info`` — so one crashing env never disturbs its neighbours.

The wrapper runs wherever the env runs (in-process for sync mode, inside the worker process for
async mode), so the manager learns about failures the same way in both: info keys below.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

import gymnasium as gym
import numpy as np

from rlpipe.envs._errors import EnvFailureError
from rlpipe.envs._registry import EnvSource

# info keys set by RecoveringEnv on the step/reset that recovered from a failure
FAILURE_KEY = "rlpipe_failure"  # str: the env's traceback(s)
FAILURE_COUNT_KEY = "rlpipe_failure_count"  # int: restarts made (≥ 1)
FAILURE_IN_STEP_KEY = "rlpipe_failure_in_step"  # bool: True if step() raised (row is not real)

# A fresh env that fails this many times in a row before taking a single good step is broken,
# not flaky: give up instead of restarting forever.
MAX_CONSECUTIVE_FAILURES = 3


def derive_seed(seed: int | None, *key: int) -> int | None:
    """A reproducible seed for a restarted env, distinct from ``seed + i`` of the initial ones."""
    if seed is None:
        return None
    return int(np.random.SeedSequence([seed, *key]).generate_state(1, np.uint32)[0])


class RecoveringEnv(gym.Wrapper):
    """Catches exceptions from ``step``/``reset``, restarts the env, reports it via ``info``.

    After a failed ``step`` it returns ``(fresh_reset_obs, 0.0, False, False, info)`` where
    ``info[FAILURE_IN_STEP_KEY]`` is True: the row is not a transition. After a failed ``reset``
    it returns the rebuilt env's reset observation. A restarted env is reset with a seed derived
    from ``(seed, index, generation, restart number)``, so a run with a seed stays reproducible.
    """

    def __init__(
        self, make_env: Callable[[], gym.Env], index: int, seed: int | None, generation: int = 0
    ) -> None:
        super().__init__(make_env())
        self._make_env = make_env
        self._index = index
        self._seed = seed
        self._generation = generation
        self._restarts = 0
        self._consecutive_failures = 0
        self._dump_file: IO[str] | None = None
        space = self.env.action_space
        # async mode sends Discrete actions as Python ints: back to the space's NumPy type here
        self._int_type = space.dtype.type if isinstance(space, gym.spaces.Discrete) else None

    def step(self, action: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        if type(action) is int and self._int_type is not None:
            action = self._int_type(action)
        try:
            out = self.env.step(action)
        except Exception:
            obs, info = self.restart(traceback.format_exc(), in_step=True)
            return obs, 0.0, False, False, info
        self._consecutive_failures = 0
        return out

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        try:
            return self.env.reset(seed=seed, options=options)
        except Exception:
            return self.restart(traceback.format_exc(), in_step=False)

    def restart(self, first_traceback: str, in_step: bool) -> tuple[Any, dict[str, Any]]:
        """Rebuild and reset the env after a failure; ``(obs, info with the failure keys)``."""
        tracebacks = [first_traceback]
        while True:
            self._consecutive_failures += 1
            if self._consecutive_failures > MAX_CONSECUTIVE_FAILURES:
                raise EnvFailureError(
                    f"sub-env {self._index} failed {self._consecutive_failures} times without a "
                    f"single successful step in between, so restarting it does not help; fix the "
                    f"env (or the actions sent to it). Its tracebacks:\n" + "\n".join(tracebacks),
                    last_traceback=tracebacks[-1],
                )
            self._restarts += 1
            try:
                self.env.close()
            except Exception:
                pass  # the env is broken anyway; its close error adds nothing to the report
            try:
                self.env = self._make_env()
                seed = derive_seed(self._seed, self._index, self._generation, self._restarts)
                obs, info = self.env.reset(seed=seed)
            except Exception:
                tracebacks.append(traceback.format_exc())
                continue
            info = dict(info)
            info[FAILURE_KEY] = "\n".join(tracebacks)
            info[FAILURE_COUNT_KEY] = len(tracebacks)
            info[FAILURE_IN_STEP_KEY] = in_step
            return obs, info

    def enable_stack_dumps(self, path: str) -> None:
        """On SIGUSR1, write this process's Python stacks to ``path`` (used for hung workers)."""
        self._dump_file = open(path, "w")  # noqa: SIM115 - must stay open for faulthandler
        faulthandler.register(signal.SIGUSR1, file=self._dump_file, all_threads=True)

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._dump_file is not None:
                faulthandler.unregister(signal.SIGUSR1)
                self._dump_file.close()
                self._dump_file = None


@dataclass(frozen=True)
class SubEnvFactory:
    """Builds sub-env ``index`` (picklable: async workers call it in their own process)."""

    source: EnvSource
    index: int
    seed: int | None
    generation: int = 0
    dump_path: str | None = None
    parent_pid: int = 0

    def __call__(self) -> RecoveringEnv:
        env = RecoveringEnv(self.source.make, self.index, self.seed, self.generation)
        in_worker = os.getpid() != self.parent_pid
        if self.dump_path is not None and in_worker and hasattr(signal, "SIGUSR1"):
            env.enable_stack_dumps(self.dump_path)
        return env
