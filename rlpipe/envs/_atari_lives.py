"""Lives, FIRE and clipped rewards of Atari games in ale-py (the presets' settings), and how the
env manager reads the real game back from either backend.

:class:`AtariLives` sits on the ALE env, below the frame resize and stack:

- ``fire``: in games whose action meanings include FIRE (Breakout), FIRE is pressed after each
  reset (after the no-op starts) and right after each lost life, within the step that lost it,
  as EnvPool's ``use_fire_reset`` does at its resets. A policy that never fires (an untrained
  greedy one) still loses its lives and ends its game.
- ``episodic_life``: a lost life in a game that goes on ends the transition
  (``terminated=True``, the frame where the life was lost); the reset that follows (the vector
  env's autoreset) does not reset the game but hands out the frame after that FIRE, as SB3's
  ``EpisodicLifeEnv`` does. A seeded reset always starts a new game.
- ``reward_clip``: the reward is the sign of the score change.

Every step's info carries the game's score change (``info["reward"]``, before clipping) and
whether the game is over (``info["terminated"]``): EnvPool's info keys and meanings, so that
:func:`game_scores` reads both backends alike. What FIRE scores at a reset is dropped, as
EnvPool drops it.
"""
from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np

SCORE_KEY = "reward"  # info: the game's score change in this step, before clipping
GAME_OVER_KEY = "terminated"  # info: the game is over (not just a life)


class AtariLives(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """FIRE after resets and lost lives, a lost life as a terminal transition, clipped rewards.
    (Its arguments are recorded in ``env.spec``, so that ``env.spec.make()`` rebuilds it.)"""

    def __init__(self, env: gym.Env, fire: bool, episodic_life: bool, reward_clip: bool) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, fire=fire, episodic_life=episodic_life,
                                                 reward_clip=reward_clip)
        gym.Wrapper.__init__(self, env)
        meanings = env.unwrapped.get_action_meanings()
        self._fire = meanings.index("FIRE") if fire and "FIRE" in meanings else None
        self._episodic = bool(episodic_life)
        self._clip = bool(reward_clip)
        self._lives = 0
        self._next_life: Any = None  # the frame the next reset hands out when the game goes on

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):  # type: ignore[no-untyped-def]
        frame, self._next_life = self._next_life, None
        if frame is not None and seed is None and options is None:
            return frame, {"lives": self._lives}
        obs, info = self.env.reset(seed=seed, options=options)
        if self._fire is not None:
            obs, _, terminated, truncated, info = self.env.step(self._fire)
            if terminated or truncated:  # not seen in any game; start again without FIRE
                obs, info = self.env.reset()
        self._lives = self._ale_lives()
        return obs, info

    def _ale_lives(self) -> int:  # looked up each time: an ALEInterface cannot be pickled
        return self.env.unwrapped.ale.lives()

    def step(self, action: Any):  # type: ignore[no-untyped-def]
        obs, reward, terminated, truncated, info = self.env.step(action)
        score = float(reward)
        lives = self._ale_lives()
        lost = lives < self._lives and not (terminated or truncated)
        after = obs
        if lost and self._fire is not None:
            after, more, terminated, truncated, info = self.env.step(self._fire)
            score += float(more)
            lives = self._ale_lives()
        self._lives = lives
        info = {**info, SCORE_KEY: score, GAME_OVER_KEY: bool(terminated)}
        if lost and self._episodic:
            if not (terminated or truncated):
                self._next_life = after  # the game goes on from here after the autoreset
            terminated = True
        else:
            obs = after
        reward = float(np.sign(score)) if self._clip else score
        return obs, reward, terminated, truncated, info


def is_atari_short_name(source: Any) -> bool:
    """Whether `source` (an EnvSource) is a registered ``atari-*`` short name."""
    target = source.target
    return isinstance(target, functools.partial) and target.func.__name__ == "_make_atari"


def game_scores(reward: np.ndarray, truncated: np.ndarray, infos: dict[str, Any],
                rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The game's score change per sub-env, and which of the ended `rows` ended their game (the
    others lost a life), from the info of an Atari step in any mode. Where a sub-env's info
    lacks the keys (a crash restart) its reward counts and its episode ends."""
    score = reward.astype(np.float64)
    _fill(score, infos, SCORE_KEY, np.arange(len(score)))
    final = infos.get("final_info")  # sync and async modes: the ended rows' step info
    if rows.size and final is not None:
        _fill(score, final, SCORE_KEY, rows)
    if not rows.size:
        return score, rows
    over = truncated.copy()
    source = final if final is not None else infos
    flags = source.get(GAME_OVER_KEY)
    if flags is None:
        return score, rows
    mask = source.get("_" + GAME_OVER_KEY)
    known = np.ones(len(over), dtype=np.bool_) if mask is None else mask
    over |= np.where(known, np.asarray(flags, dtype=np.bool_), True)
    return score, rows[over[rows]]


def _fill(out: np.ndarray, infos: dict[str, Any], key: str, rows: np.ndarray) -> None:
    """out[rows] = infos[key][rows] where the info has the key (gymnasium's `_key` mask)."""
    values = infos.get(key)
    if values is None:
        return
    mask = infos.get("_" + key)
    if mask is not None:
        rows = rows[mask[rows]]
    out[rows] = np.asarray(values)[rows]
