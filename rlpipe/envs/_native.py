"""Native vector envs (``vector_entry_point``): turning their autoreset into SAME_STEP semantics.

A NEXT_STEP vector env returns, on the step after an episode ends, a pseudo-transition (reset obs,
reward 0, action ignored). We never let it happen: right after a step in which sub-envs finished,
we reset just those sub-envs, so the next step is a real transition for every row.
``partial_reset(env, rows)`` does that and returns the new first observations of those rows.

gymnasium 1.4's ``CartPoleVectorEnv.reset`` ignores ``options["reset_mask"]`` (it resets every
sub-env), so CartPole gets a dedicated partial reset that draws its reset states from the env's
own generator exactly as its NEXT_STEP autoreset would. Other NEXT_STEP envs use
``reset(options={"reset_mask": mask})``, and we check that the other rows were left alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from rlpipe.envs._errors import EnvFailureError
from rlpipe.envs._obs import BatchObs, copy_batch, equal_rows, to_batch

# partial_reset(env, done_mask, last_obs) -> the whole batch of observations after resetting the
# sub-envs in done_mask (a new object: the caller keeps last_obs as the final observations)
PartialReset = Callable[[VectorEnv, np.ndarray, BatchObs], BatchObs]


def _cartpole_partial_reset(env: VectorEnv, done: np.ndarray, last_obs: BatchObs) -> BatchObs:
    # Exactly what CartPoleVectorEnv.step does to its `prev_done` sub-envs at the start of the
    # next step (same draws from the same generator), done now instead.
    core: Any = env.unwrapped
    core.state[:, done] = core.np_random.uniform(
        low=core.low, high=core.high, size=(4, int(np.count_nonzero(done)))
    )
    core.steps[done] = 0
    core.prev_done[:] = False
    return core.state.T.astype(np.float32)


def _masked_reset(env: VectorEnv, done: np.ndarray, last_obs: BatchObs) -> BatchObs:
    obs, _ = env.reset(options={"reset_mask": done.copy()})
    obs = copy_batch(to_batch(obs))
    others = np.flatnonzero(~done)
    if len(others) and not equal_rows(obs, last_obs, others):
        raise EnvFailureError(
            f"the native vector env {type(env.unwrapped).__name__} ignored "
            f"reset(options={{'reset_mask': ...}}) and reset sub-envs whose episodes were still "
            f"running, so its autoreset cannot be normalised. Use mode='sync' (or 'async')."
        )
    return obs


def _known_partial_resets() -> dict[type, PartialReset]:
    from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv

    return {CartPoleVectorEnv: _cartpole_partial_reset}


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
    return (known, True) if known is not None else (_masked_reset, False)


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
