"""Atari through ale-py, preprocessed for DQN without OpenCV: 84x84 grey frames, a stack of 4.

ALE does the frame skipping and grey-scaling itself (`frameskip=4`, `obs_type="grayscale"`);
we average 2x2 blocks (210x160 → 105x80, which keeps 2-pixel objects such as Pong's ball) and
pick rows and columns to 84x84, then stack the last 4 frames as a [4, 84, 84] uint8 array.
"""
from __future__ import annotations

import importlib.util

import gymnasium as gym
import numpy as np

from rlpipe.envs._errors import MissingDependencyError

SIZE = 84


class GreyResize(gym.ObservationWrapper):
    """[210, 160] grey frames → [84, 84] uint8 (2x2 mean, then nearest rows/columns)."""

    def __init__(self, env: gym.Env, size: int = SIZE) -> None:
        super().__init__(env)
        height, width = env.observation_space.shape[:2]
        self._rows = (np.arange(size) * (height // 2) / size).astype(np.intp)
        self._cols = (np.arange(size) * (width // 2) / size).astype(np.intp)
        self.observation_space = gym.spaces.Box(0, 255, (size, size), np.uint8)

    def observation(self, frame: np.ndarray) -> np.ndarray:
        h, w = frame.shape[0] // 2 * 2, frame.shape[1] // 2 * 2
        pooled = frame[:h, :w].reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
        return pooled[np.ix_(self._rows, self._cols)].astype(np.uint8)


def make_atari(game: str = "ALE/Pong-v5", frame_stack: int = 4, **kwargs) -> gym.Env:
    """One preprocessed Atari env (`game` is an ALE id, e.g. "ALE/Breakout-v5")."""
    if importlib.util.find_spec("ale_py") is None:
        raise MissingDependencyError(
            f"Atari env {game!r} needs ale-py; install it with: pip install \"rlpipe[atari]\"")
    import ale_py

    gym.register_envs(ale_py)
    env = gym.make(game, obs_type="grayscale", frameskip=4, **kwargs)
    return gym.wrappers.FrameStackObservation(GreyResize(env), frame_stack)
