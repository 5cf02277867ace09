"""MaskedGrid: a tiny maze whose invalid moves end the episode, with the valid moves as a mask.

Registered with gymnasium as ``"rlpipe/MaskedGrid-v0"`` (50 steps per episode at most).

The agent starts in the top-left cell of a 5×5 maze and must reach the bottom-right one.
Actions: 0 up, 1 down, 2 left, 3 right. A move into a wall or off the grid is *invalid*: the
episode ends (terminated) with reward −1. Reaching the goal ends it with reward +1; every other
step gives 0. The shortest path takes 8 moves, so a discounted learner prefers it.

Observation: ``Box(0, 1, (25,), float32)``, the one-hot of the agent's cell. The valid moves
are in ``info["action_mask"]`` (bool ``[4]``) after every reset and step, unless the env is
made with ``expose_mask=False`` (then the agent must learn the walls from the penalty).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

GYM_ID = "rlpipe/MaskedGrid-v0"
# '#' wall, 'S' start, 'G' goal
LAYOUT = (
    "S.#..",
    "..#.#",
    "#....",
    "..##.",
    ".#..G",
)
MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))  # up, down, left, right


class MaskedGridEnv(gym.Env):
    """See the module docstring."""

    metadata = {"render_modes": []}

    def __init__(self, expose_mask: bool = True) -> None:
        self.expose_mask = bool(expose_mask)
        self.size = len(LAYOUT)
        self.walls = np.array([[c == "#" for c in row] for row in LAYOUT])
        self.start = _find("S")
        self.goal = _find("G")
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self.size * self.size,), np.float32)
        self.action_space = gym.spaces.Discrete(len(MOVES))
        self.pos = self.start

    def valid_actions(self) -> np.ndarray:
        """Bool [4]: the moves from the current cell that stay on the grid and off the walls."""
        return np.array([self._free(self.pos[0] + dr, self.pos[1] + dc) for dr, dc in MOVES])

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.pos = self.start
        return self._obs(), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        action = int(action)
        if not 0 <= action < len(MOVES):
            raise ValueError(f"MaskedGrid: action must be in 0..3 (up, down, left, right), "
                             f"got {action}")
        dr, dc = MOVES[action]
        row, col = self.pos[0] + dr, self.pos[1] + dc
        if not self._free(row, col):
            return self._obs(), -1.0, True, False, self._info(invalid=True)
        self.pos = (row, col)
        reached = self.pos == self.goal
        return self._obs(), 1.0 if reached else 0.0, reached, False, self._info()

    def _free(self, row: int, col: int) -> bool:
        inside = 0 <= row < self.size and 0 <= col < self.size
        return bool(inside and not self.walls[row, col])

    def _obs(self) -> np.ndarray:
        obs = np.zeros(self.size * self.size, dtype=np.float32)
        obs[self.pos[0] * self.size + self.pos[1]] = 1.0
        return obs

    def _info(self, invalid: bool = False) -> dict:
        info: dict[str, Any] = {"invalid_action": invalid}
        if self.expose_mask:
            info["action_mask"] = self.valid_actions()
        return info


def _find(char: str) -> tuple[int, int]:
    for r, row in enumerate(LAYOUT):
        if char in row:
            return r, row.index(char)
    raise ValueError(f"MaskedGrid layout has no {char!r}")


def register() -> None:
    """Register ``"rlpipe/MaskedGrid-v0"`` with gymnasium (once)."""
    if GYM_ID not in gym.registry:
        gym.register(GYM_ID, entry_point="rlpipe.envs._maskedgrid:MaskedGridEnv",
                     max_episode_steps=50)
