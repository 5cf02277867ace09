"""EnvPool mode: Atari games stepped in C++ threads, normalised to rlpipe's step result.

EnvPool autoresets NEXT_STEP: the step after an episode ends returns the reset observation with
reward 0 and ignores its action. We never send that step: right after a step in which sub-envs
finished, ``EnvPoolBackend`` sends just those sub-envs their pseudo-step (``step(noop,
env_id=rows)``: EnvPool steps a subset) and keeps its observation as theirs, so the finished
step's observation is the true final one and every row of the next step is a real transition.
Not ``reset(env_id=rows)``: with ``episodic_life`` it restarts the whole game after a lost life,
where the pseudo-step goes on with the next life. EnvPool returns new arrays on every call (checked in tests), so nothing is copied.

Episode reports (``StepResult.episodes``) are those of the real game: the return sums EnvPool's
``info["reward"]`` (the game's score change, before ``reward_clip``), and with ``episodic_life`` a
lost life ends the transition (``terminated``) but not the episode, which ends where
``info["terminated"]`` (game over) or ``truncated`` is set.

EnvPool presses FIRE (``use_fire_reset``) only in its resets, so without ``episodic_life`` a
Breakout policy that never fires stalls after its first lost life until the 27k-step cut. So the
pool always runs with ``episodic_life=True``; where the preset does not end transitions at lost
lives ("eval"), a lost life's pseudo-step (no-ops, FIRE) becomes part of the step that lost it:
that row is not terminated, and its next observation is the one after FIRE.

EnvPool cannot snapshot its envs, so :meth:`EnvManager.get_state` is refused in this mode.
"""

from __future__ import annotations

import functools
import importlib.util
import traceback
from typing import Any

import gymnasium as gym
import numpy as np

from rlpipe.envs._actions import ActionCheck
from rlpipe.envs._atari_lives import is_atari_short_name
from rlpipe.envs._atari_presets import ATARI_PRESETS, PRESET_KEY, preset  # noqa: F401 (ATARI_PRESETS: re-exported)
from rlpipe.envs._errors import EnvFailureError, MissingDependencyError
from rlpipe.envs._outcome import Failure, Outcome, Rebuilding
from rlpipe.envs._recovery import MAX_CONSECUTIVE_FAILURES
from rlpipe.envs._registry import EnvSource

# How frames are preprocessed: ATARI_PRESETS in _atari_presets.py (shared with ale-py).

_INSTALL = 'EnvPool is not installed; install it with: pip install "rlpipe[envpool]"'


def envpool_installed() -> bool:
    return importlib.util.find_spec("envpool") is not None


def envpool_task(source: EnvSource) -> str | None:
    """EnvPool's task id for ``source`` ("ALE/Pong-v5" or "atari-pong" -> "Pong-v5"), or None
    when it is not an Atari game (only Atari is supported in this mode so far)."""
    gym_id = source.gym_id
    if gym_id is None and is_atari_short_name(source):  # a partial of _make_atari
        gym_id = source.target.args[0]
    if not isinstance(gym_id, str) or not gym_id.startswith("ALE/"):
        return None
    return gym_id.removeprefix("ALE/")


def auto_picks_envpool(source: EnvSource) -> bool:
    """Mode "auto" runs a registered Atari short name ("atari-pong": 84x84 grey frames, a stack
    of 4, whatever the backend) in EnvPool when it is installed and has the game. A raw "ALE/..."
    id is not switched: EnvPool would turn its 210x160 RGB frames into preprocessed ones."""
    if source.gym_id is not None or not envpool_installed():
        return False
    task = envpool_task(source)
    return task is not None and task in _all_tasks()


@functools.cache
def _all_tasks() -> frozenset[str]:
    import envpool

    return frozenset(envpool.list_all_envs())


def check_envpool_source(source: EnvSource) -> str:
    """The EnvPool task for mode="envpool", or a ValueError / MissingDependencyError saying why not."""
    task = envpool_task(source)
    if task is None:
        raise ValueError(
            f"EnvManager(mode='envpool'): {source.label} is not an Atari game; this mode runs "
            f"Atari ids ('ALE/Pong-v5') and the 'atari-*' short names. Use mode='sync', 'async' "
            f"or 'native' for other envs.")
    if not envpool_installed():
        raise MissingDependencyError(f"EnvManager(mode='envpool') for {source.label}: {_INSTALL}")
    if task not in _all_tasks():
        raise ValueError(
            f"EnvManager(mode='envpool'): EnvPool has no task {task!r} (from {source.label}); "
            f"see envpool.list_all_envs(), or use mode='sync'.")
    return task


def envpool_options(source: EnvSource) -> dict[str, Any]:
    """envpool.make options: the preset (``env_kwargs["atari_preset"]``, default "eval") with
    the other env_kwargs over it. A short name's other kwargs (for ale-py) are not passed on."""
    kwargs = dict(source.kwargs)
    chosen = preset(kwargs.pop(PRESET_KEY, "eval"), "EnvManager(mode='envpool')")
    extra = kwargs if source.gym_id is not None else {}
    return {**chosen, **extra}


def _fresh_seed() -> int:
    return int(np.random.SeedSequence().entropy % (2**31 - 1))


class EnvPoolBackend(Rebuilding):
    """``n_envs`` Atari games in one EnvPool (``env_type="gymnasium"``, synchronous)."""

    def __init__(self, source: EnvSource, n_envs: int, seed: int | None) -> None:
        self._task = check_envpool_source(source)
        self._options = envpool_options(source)
        self._life_ends_transition = bool(self._options.get("episodic_life"))
        self.n_envs = n_envs
        self._seed = seed
        self._pool_seed = _fresh_seed() if seed is None else seed  # sub-env i: pool seed + i
        self._pool: Any = self._build(self._pool_seed)
        self._stepped = False
        self.single_observation_space = self._pool.observation_space
        self.single_action_space = self._pool.action_space
        self.batch_action_space = gym.vector.utils.batch_space(self.single_action_space, n_envs)
        self._check_actions = ActionCheck(self.batch_action_space, n_envs)
        self.reset_infos: dict[str, Any] = {}

    def _build(self, seed: int) -> Any:
        import envpool

        try:
            return envpool.make(self._task, env_type="gymnasium", num_envs=self.n_envs,
                                seed=seed, **{**self._options, "episodic_life": True})
        except TypeError as exc:  # an unknown option: say which ones exist
            raise ValueError(
                f"EnvManager(mode='envpool'): envpool.make({self._task!r}) rejected the options "
                f"{self._options}: {exc}. See envpool.make_spec({self._task!r}) for its options."
            ) from exc

    def reset(self, seed: int | None) -> tuple[np.ndarray, list[Failure]]:
        if seed is not None and (seed != self._pool_seed or self._stepped):
            self._shutdown()  # EnvPool seeds only when built: a new seed needs a new pool
            self._pool_seed = seed
            self._pool = self._build(seed)
        self._stepped = True
        try:
            obs, self.reset_infos = self._pool.reset()
        except Exception:  # noqa: BLE001 - the pool raised: rebuild it
            failure = Failure(tuple(range(self.n_envs)), "the EnvPool raised in reset()",
                              traceback.format_exc())
            obs, more = self._rebuild_and_reset()
            return obs, [failure, *more]
        return obs, []

    def step(self, actions: Any) -> Outcome:
        actions = self._check_actions(actions)  # a bad action is the caller's mistake: ValueError
        if actions.dtype != np.int32:
            actions = actions.astype(np.int32)
        try:
            obs, reward, terminated, truncated, infos = self._pool.step(actions)
            ended = terminated | truncated  # also a lost life with episodic_life
            reset_rows = ended.nonzero()[0]
            next_obs = obs
            if reset_rows.size:  # their pseudo-step now, so that the next step is real for all
                obs = obs.copy()
                noop = np.zeros(reset_rows.size, dtype=np.int32)  # ignored by EnvPool
                fresh, *_, pseudo_info = self._pool.step(noop, env_id=reset_rows)
                obs[pseudo_info["env_id"]] = fresh
                game_over = infos["terminated"].astype(np.bool_) | truncated
                done_rows = (ended & game_over).nonzero()[0]
                if not self._life_ends_transition and done_rows.size < reset_rows.size:
                    lives = ended & ~game_over  # each goes on after its FIRE
                    terminated = terminated & game_over
                    next_obs = next_obs.copy()
                    next_obs[lives] = obs[lives]
            else:
                done_rows = reset_rows
        except Exception:  # noqa: BLE001 - the pool raised: rebuild it
            return self._recover(Failure(
                tuple(range(self.n_envs)), "the EnvPool raised in step() and was rebuilt",
                traceback.format_exc(),
            ))
        self._steps_since_rebuild += 1
        return (obs, next_obs, reward, terminated, truncated, done_rows, None, [], infos)

    def _rebuild_and_reset(self) -> tuple[np.ndarray, list[Failure]]:
        errors = []
        for _ in range(MAX_CONSECUTIVE_FAILURES):
            self._shutdown()
            self._generation += 1
            self._steps_since_rebuild = 0
            seeds = self._rebuild_seeds()
            try:
                self._pool = self._build(_fresh_seed() if seeds is None else seeds[0])
                obs, self.reset_infos = self._pool.reset()
            except Exception:  # noqa: BLE001 - collected and re-raised below
                errors.append(traceback.format_exc())
                continue
            return obs, []
        raise EnvFailureError(
            f"could not rebuild the EnvPool after {len(errors)} attempts:\n" + "\n".join(errors))

    def _shutdown(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            try:
                pool.close()
            except Exception:  # noqa: BLE001 - closing a broken pool; nothing more to do
                pass

    def close(self) -> None:
        self._shutdown()
