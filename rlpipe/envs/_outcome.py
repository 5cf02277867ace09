"""The step contract every backend returns, and the whole-vector recovery they share.

A backend's ``step`` returns an ``Outcome`` tuple with SAME_STEP semantics (``obs`` is what to act
from next, ``next_obs`` holds the true final observation of finished episodes) and lists the
failures it recovered from; the manager does the bookkeeping common to all backends:

- ``LoopBackend`` (``_loop``): sync mode, the sub-envs in a loop in this process.
- ``AsyncBackend`` (``_async``): ``AsyncVectorEnv``, rebuilt when a worker dies or hangs.
- ``NativeBackend`` (``_native``): the env's own vector implementation, autoreset normalised.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rlpipe.envs._errors import EnvFailureError
from rlpipe.envs._obs import BatchObs, copy_batch, set_rows
from rlpipe.envs._recovery import (
    FAILURE_COUNT_KEY,
    FAILURE_IN_STEP_KEY,
    FAILURE_KEY,
    MAX_CONSECUTIVE_FAILURES,
    derive_seed,
)

NO_ROWS = np.zeros(0, dtype=np.int64)
NO_ROWS.flags.writeable = False
FAILURE_MASK_KEY = "_" + FAILURE_KEY  # gymnasium's per-env mask for an info key


@dataclass
class Failure:
    """One recovered failure: which sub-envs, what happened, the env's traceback."""

    env_ids: tuple[int, ...]
    what: str
    text: str
    count: int = 1


NO_FAILURES: tuple[list[Failure], None] = ([], None)


# One normalised vector step, as a plain tuple in this order (a NamedTuple's constructor, run on
# every step, cost 2% of a 64-env native CartPole step):
#   obs, next_obs, reward (float32), terminated, truncated,
#   done_rows: indices of the rows whose episode ended (terminated or truncated),
#   invalid: bool mask of the rows that are not real transitions, or None,
#   failures: the failures recovered from in this step, infos: the vector env's info dict.
Outcome = tuple[
    BatchObs, BatchObs, np.ndarray, np.ndarray, np.ndarray, np.ndarray, "np.ndarray | None",
    "list[Failure]", "dict[str, Any]",
]


def same_step_outcome(
    obs: BatchObs, reward: Any, terminated: Any, truncated: Any, infos: dict[str, Any], n: int
) -> Outcome:
    """Outcome of a SAME_STEP vector step: final observations come from ``info["final_obs"]``."""
    done_rows = (terminated | truncated).nonzero()[0]
    next_obs = obs
    if done_rows.size:
        next_obs = copy_batch(obs)
        set_rows(next_obs, done_rows, infos["final_obs"][done_rows])
    failures, invalid = failures_from_info(infos, n) if FAILURE_MASK_KEY in infos else NO_FAILURES
    return (
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


class Rebuilding:
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
        return (
            obs, obs, np.zeros(n, dtype=np.float32), zeros, zeros.copy(), NO_ROWS,
            np.ones(n, dtype=np.bool_), [failure, *more],
            dict(getattr(self, "reset_infos", None) or {}),  # the fresh envs' (action masks)
        )

    def _rebuild_seeds(self) -> list[int | None] | None:
        if self._seed is None:
            return None
        return [derive_seed(self._seed, i, self._generation, 0) for i in range(self.n_envs)]
