"""Atari through ale-py, preprocessed for DQN without OpenCV: 84x84 grey frames, a stack of 4.

The settings are the preset's (``_atari_presets.py``, shared with EnvPool): ALE skips frames and
grey-scales itself (`frameskip`, `obs_type="grayscale"`), with no sticky actions and the preset's
episode cut; `NoopStart` plays up to `noop_max` no-ops after each reset; `AtariLives`
(``_atari_lives.py``) presses FIRE, ends transitions at lost lives and clips rewards as the
preset says; we average 2x2 blocks
(210x160 → 105x80, which keeps 2-pixel objects such as Pong's ball) and pick rows and columns to
84x84, then stack the last 4 frames as a [4, 84, 84] uint8 array.
"""
from __future__ import annotations

import importlib.util

import gymnasium as gym
import numpy as np

from rlpipe.envs._atari_lives import AtariLives
from rlpipe.envs._atari_presets import PRESET_KEY, preset
from rlpipe.envs._errors import MissingDependencyError

SIZE = 84


class GreyResize(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """[210, 160] grey frames → [84, 84] uint8 (2x2 mean, then nearest rows/columns)."""

    def __init__(self, env: gym.Env, size: int = SIZE) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, size=size)  # env.spec can rebuild it
        gym.ObservationWrapper.__init__(self, env)
        height, width = env.observation_space.shape[:2]
        self._rows = (np.arange(size) * (height // 2) / size).astype(np.intp)
        self._cols = (np.arange(size) * (width // 2) / size).astype(np.intp)
        self.observation_space = gym.spaces.Box(0, 255, (size, size), np.uint8)

    def observation(self, frame: np.ndarray) -> np.ndarray:
        h, w = frame.shape[0] // 2 * 2, frame.shape[1] // 2 * 2
        pooled = frame[:h, :w].reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
        return pooled[np.ix_(self._rows, self._cols)].astype(np.uint8)


class NoopStart(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """After each reset, play a random number (1 to `noop_max`) of no-op actions (action 0), so
    that episodes start from varied states (the DQN paper's evaluation protocol)."""

    def __init__(self, env: gym.Env, noop_max: int) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, noop_max=noop_max)  # env.spec rebuilds it
        gym.Wrapper.__init__(self, env)
        self.noop_max = int(noop_max)

    def reset(self, **kwargs):  # type: ignore[no-untyped-def]
        obs, info = self.env.reset(**kwargs)
        if self.noop_max < 1:
            return obs, info
        for _ in range(int(self.np_random.integers(1, self.noop_max + 1))):
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                obs, info = self.env.reset()
        return obs, info


def make_atari(game: str = "ALE/Pong-v5", frame_stack: int = 4, **kwargs) -> gym.Env:
    """One preprocessed Atari env (`game` is an ALE id, e.g. "ALE/Breakout-v5"), set up as the
    preset `kwargs["atari_preset"]` says (default "eval"); other kwargs go to gymnasium.make."""
    if importlib.util.find_spec("ale_py") is None:
        raise MissingDependencyError(
            f"Atari env {game!r} needs ale-py; install it with: pip install \"rlpipe[atari]\"")
    name = kwargs.pop(PRESET_KEY, "eval")
    settings = preset(name, f"Atari env {game!r} (ale-py)")
    import ale_py

    gym.register_envs(ale_py)
    options = dict(frameskip=settings["frame_skip"],
                   repeat_action_probability=settings["repeat_action_probability"],
                   max_num_frames_per_episode=settings["max_episode_steps"] * settings["frame_skip"])
    env = gym.make(game, obs_type="grayscale", **{**options, **kwargs})
    env = AtariLives(NoopStart(env, settings["noop_max"]), fire=settings["use_fire_reset"],
                     episodic_life=settings["episodic_life"], reward_clip=settings["reward_clip"])
    return gym.wrappers.FrameStackObservation(GreyResize(env), frame_stack)
