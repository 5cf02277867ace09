"""Native mode: an env's own vector implementation (``vector_entry_point``), in SAME_STEP terms.

A NEXT_STEP vector env returns, on the step after an episode ends, a pseudo-transition (reset obs,
reward 0, action ignored). We never let it happen: right after a step in which sub-envs finished,
``NativeBackend`` resets just those sub-envs (``partial_reset(env, done_mask, last_obs)`` returns
the whole batch after that reset), so the next step is a real transition for every row. An
exception from the env rebuilds it (every row of that step invalid).

gymnasium 1.4's ``CartPoleVectorEnv.reset`` ignores ``options["reset_mask"]`` (it resets every
sub-env), so CartPole gets a dedicated partial reset (:class:`CartPoleStarts`) that draws its
start states from the env's own generator and reset bounds, as its NEXT_STEP autoreset would.
Other NEXT_STEP envs use ``reset(options={"reset_mask": mask})``, and we check that the other rows
were left alone. Actions are checked before the step (``_actions``).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.error import DependencyNotInstalled
from gymnasium.vector import AutoresetMode, VectorEnv

from rlpipe.envs._actions import ActionCheck
from rlpipe.envs._errors import EnvFailureError, MissingDependencyError
from rlpipe.envs._obs import BatchObs, copy_batch, equal_rows, to_batch
from rlpipe.envs._outcome import Failure, Outcome, Rebuilding, same_step_outcome
from rlpipe.envs._recovery import MAX_CONSECUTIVE_FAILURES
from rlpipe.envs._registry import EnvSource, install_hint

# partial_reset(env, done_rows, last_obs) -> the whole batch of observations after resetting the
# sub-envs at done_rows (a new object: the caller keeps last_obs as the final observations)
PartialReset = Callable[[VectorEnv, np.ndarray, BatchObs], BatchObs]


class CartPoleStarts:
    """CartPole's partial reset: finished sub-envs get their next start state right away.

    What ``CartPoleVectorEnv.step`` does to its ``prev_done`` sub-envs at the start of the next
    step, done now instead, with start states drawn from the env's own generator and bounds
    (``low``/``high``) ahead of time, :data:`BLOCK` at a time: the k-th sub-env reset takes the
    k-th row of 4 draws, so a single env gets exactly the start states of ``CartPoleEnv``'s
    resets. ``clear()`` drops the rows not yet used (after ``reset()``, which may reseed).
    """

    BLOCK = 256

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self._starts = np.empty((0, 4))
        self._next = 0

    def __call__(self, env: VectorEnv, done_rows: np.ndarray, last_obs: BatchObs) -> BatchObs:
        core: Any = env.unwrapped
        i, k = self._next, done_rows.size
        if i + k > len(self._starts):
            fresh = core.np_random.uniform(low=core.low, high=core.high, size=(self.BLOCK + k, 4))
            self._starts = np.concatenate([self._starts[i:], fresh])
            i = 0
        self._next = i + k
        rows_state = core.state.T  # (n_envs, 4), a view
        rows_state[done_rows] = self._starts[i:i + k]
        core.steps[done_rows] = 0
        # the env rebinds prev_done on every step and only reads it: a shared all-False one will do
        core.prev_done = _no_done(core.num_envs)
        return rows_state.astype(np.float32)


def _cartpole_partial_reset(env: VectorEnv, done_rows: np.ndarray, last_obs: BatchObs) -> BatchObs:
    """CartPole's partial reset before :class:`CartPoleStarts`: env states saved by that version
    name this function, and :meth:`NativeBackend.restore` replaces it with a CartPoleStarts."""
    raise RuntimeError("a saved native env state was not restored with NativeBackend.restore()")


_FLOAT32 = np.dtype(np.float32)
_NO_DONE: dict[int, np.ndarray] = {}


def _no_done(n: int) -> np.ndarray:
    mask = _NO_DONE.get(n)
    if mask is None:
        mask = _NO_DONE[n] = np.zeros(n, dtype=np.bool_)
        mask.flags.writeable = False
    return mask


def _masked_reset(env: VectorEnv, done_rows: np.ndarray, last_obs: BatchObs) -> BatchObs:
    done = np.zeros(env.num_envs, dtype=np.bool_)
    done[done_rows] = True
    obs, _ = env.reset(options={"reset_mask": done})
    obs = copy_batch(to_batch(obs))
    others = np.flatnonzero(~done)
    if len(others) and not equal_rows(obs, last_obs, others):
        raise EnvFailureError(
            f"the native vector env {type(env.unwrapped).__name__} ignored "
            f"reset(options={{'reset_mask': ...}}) and reset sub-envs whose episodes were still "
            f"running, so its autoreset cannot be normalised. Use mode='sync' (or 'async')."
        )
    return obs


def _known_partial_resets() -> dict[type, Callable[[], PartialReset]]:
    from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv

    return {CartPoleVectorEnv: CartPoleStarts}


def autoreset_of(env_or_cls: Any) -> AutoresetMode:
    mode = getattr(env_or_cls, "metadata", {}).get("autoreset_mode", AutoresetMode.NEXT_STEP)
    return mode if isinstance(mode, AutoresetMode) else AutoresetMode(mode)


def partial_reset_for(env: VectorEnv) -> tuple[PartialReset | None, bool]:
    """``(partial reset, fresh)`` for a native env.

    The partial reset is None for a SAME_STEP env. ``fresh`` is True when we know the env's
    ``step`` returns new arrays (not views of its internal buffers), so they need no copy.
    """
    if autoreset_of(env) == AutoresetMode.SAME_STEP:
        return None, False
    known = _known_partial_resets().get(type(env.unwrapped))
    return (known(), True) if known is not None else (_masked_reset, False)


def native_is_known_good(gym_id: str) -> bool:
    """Whether ``gym_id`` has a vector entry point that we can normalise without trial.

    True for SAME_STEP native envs and the ones with a dedicated partial reset (CartPole).
    Never raises: a vector entry point that fails to import just means "no".
    """
    try:
        spec = gym.spec(gym_id)
        entry = spec.vector_entry_point
        if entry is None:
            return False
        creator = entry if callable(entry) else gym.envs.registration.load_env_creator(entry)
    except Exception:  # noqa: BLE001 - an optional backend (jax...) missing: fall back to sync
        return False
    return creator in _known_partial_resets() or autoreset_of(creator) == AutoresetMode.SAME_STEP


class NativeBackend(Rebuilding):
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
            raise MissingDependencyError(install_hint(self._source, exc)) from exc
        self._partial, self._fresh = partial_reset_for(vec)
        self._check_actions = ActionCheck(vec.action_space, self.n_envs, trusted_by_env=True)
        return vec

    def reset(self, seed: int | None) -> tuple[BatchObs, list[Failure]]:
        if isinstance(self._partial, CartPoleStarts):
            self._partial.clear()  # start states drawn before a reseed would not follow the seed
        try:
            obs, self.reset_infos = self._vec.reset(seed=seed)  # masks are read from it
        except Exception:  # noqa: BLE001 - the env raised: rebuild it
            failure = Failure(tuple(range(self.n_envs)), "the native vector env raised in reset()",
                              traceback.format_exc())
            obs, more = self._rebuild_and_reset()
            return obs, [failure, *more]
        return copy_batch(to_batch(obs)), []

    def step(self, actions: Any) -> Outcome:
        actions = self._check_actions(actions)  # a bad action is the caller's mistake: ValueError
        try:
            try:
                obs, reward, terminated, truncated, infos = self._vec.step(actions)
            finally:
                self._check_actions.release()
            if not self._fresh:
                obs = copy_batch(to_batch(obs))
            elif not isinstance(obs, np.ndarray):
                obs = to_batch(obs)
            if self._partial is None:
                out = same_step_outcome(obs, reward, terminated, truncated, infos, self.n_envs)
            else:
                done_rows = (terminated | truncated).nonzero()[0]
                next_obs = obs
                if done_rows.size:  # reset those sub-envs now: no pseudo-step comes next
                    obs = self._partial(self._vec, done_rows, next_obs)
                if reward.dtype is not _FLOAT32:
                    reward = reward.astype(np.float32)
                out = (obs, next_obs, reward, terminated, truncated, done_rows, None, [], infos)
        except EnvFailureError:
            raise
        except Exception:  # noqa: BLE001 - the env raised: rebuild it
            return self._recover(Failure(
                tuple(range(self.n_envs)), "the native vector env raised in step() and was rebuilt",
                traceback.format_exc(),
            ))
        self._steps_since_rebuild += 1
        return out

    def restore(self, saved: dict[str, Any]) -> None:
        """Take over a state saved from another NativeBackend's ``__dict__`` (EnvManager.set_state),
        also one saved before CartPoleStarts and the action check existed."""
        self.__dict__.update(saved)
        if self._partial is _cartpole_partial_reset:
            self._partial = CartPoleStarts()  # same draws, taken ahead from the same generator
        if "_check_actions" not in saved:
            self._check_actions = ActionCheck(self._vec.action_space, self.n_envs,
                                              trusted_by_env=True)

    def _rebuild_and_reset(self) -> tuple[BatchObs, list[Failure]]:
        errors = []
        for _ in range(MAX_CONSECUTIVE_FAILURES):
            self._shutdown()
            self._generation += 1
            self._steps_since_rebuild = 0
            try:
                self._vec = self._build()
                seeds = self._rebuild_seeds()
                obs, self.reset_infos = self._vec.reset(seed=None if seeds is None else seeds[0])
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
