"""A simulated real-time Pendulum: Pendulum-v1's physics advanced by the wall clock.

:class:`PendulumInterface` is an rtgym interface (duck-typed: rtgym calls its methods) whose
pendulum moves on its own between calls: each call integrates the elapsed wall-clock time,
times ``time_scale``, under the torque applied at that moment. Through rtgym
(:func:`make_rtpendulum`) the action given to ``step`` is applied from the next time step on (a
one-step delay) and the observation is ``[cos θ, sin θ, θ̇]`` followed by the action buffer.

The reward of a step is Pendulum-v1's, ``-(θ² + 0.1 θ̇² + 0.001 u²)`` at the captured state and
the torque then applied, so returns compare with Pendulum-v1's when one time step lasts 0.05 s of
pendulum time (``time_step_duration * time_scale = 0.05``: 20 Hz at scale 1, 50 Hz at 2.5).
Registered as ``"rlpipe/RTPendulum-v0"`` (20 Hz, flattened observation, 200 steps an episode).
"""
from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Tuple

import gymnasium as gym
import numpy as np

from rlpipe.envs._realtime import make_realtime_env

RTPENDULUM_ID = "rlpipe/RTPendulum-v0"
MAX_SPEED, MAX_TORQUE, G, M, L = 8.0, 2.0, 10.0, 1.0, 1.0  # Pendulum-v1's constants
SUBSTEP = 0.01  # seconds of pendulum time per integration step


def _angle_normalize(x: float) -> float:
    return ((x + np.pi) % (2 * np.pi)) - np.pi


class PendulumInterface:
    """rtgym interface of a pendulum advanced by ``time_scale`` × elapsed wall-clock seconds."""

    def __init__(self, time_scale: float = 1.0, seed: Optional[int] = None) -> None:
        if not float(time_scale) > 0:
            raise ValueError(f"PendulumInterface(time_scale={time_scale!r}): must be > 0")
        self.time_scale = float(time_scale)
        self.rng = np.random.default_rng(seed)
        self.state = np.zeros(2)  # θ (0 upright), θ̇
        self.torque = 0.0
        self.last_t = time.perf_counter()

    def _advance(self) -> None:
        now = time.perf_counter()
        left = (now - self.last_t) * self.time_scale
        self.last_t = now
        th, thdot = self.state
        while left > 1e-9:  # Pendulum-v1's semi-implicit Euler, in substeps
            dt = min(SUBSTEP, left)
            thdot += (3 * G / (2 * L) * np.sin(th) + 3.0 / (M * L ** 2) * self.torque) * dt
            thdot = float(np.clip(thdot, -MAX_SPEED, MAX_SPEED))
            th += thdot * dt
            left -= dt
        self.state = np.array([th, thdot])

    def _obs(self) -> List[np.ndarray]:
        th, thdot = self.state
        return [np.array([np.cos(th), np.sin(th), thdot], dtype=np.float32)]

    def send_control(self, control: Any) -> None:
        self._advance()  # the old torque acted until now
        if control is not None:
            self.torque = float(np.clip(np.asarray(control).reshape(-1)[0], -MAX_TORQUE,
                                        MAX_TORQUE))

    def reset(self, seed: Optional[int] = None,
              options: Optional[Dict[str, Any]] = None) -> Tuple[List[np.ndarray], Dict]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        state = (options or {}).get("state")
        if state is None:
            state = self.rng.uniform([-np.pi, -1.0], [np.pi, 1.0])
        self.state = np.array(state, dtype=np.float64)
        self.torque = 0.0
        self.last_t = time.perf_counter()
        return self._obs(), {}

    def get_obs_rew_terminated_info(self) -> Tuple[List[np.ndarray], float, bool, Dict]:
        self._advance()
        th, thdot = self.state
        cost = _angle_normalize(th) ** 2 + 0.1 * thdot ** 2 + 0.001 * self.torque ** 2
        return self._obs(), -float(cost), False, {}

    def wait(self) -> None:
        """Between episodes nothing is held: the next reset sets a new state."""

    def get_observation_space(self) -> gym.spaces.Tuple:
        high = np.array([1.0, 1.0, MAX_SPEED], dtype=np.float32)
        return gym.spaces.Tuple((gym.spaces.Box(-high, high, dtype=np.float32),))

    def get_action_space(self) -> gym.spaces.Box:
        return gym.spaces.Box(-MAX_TORQUE, MAX_TORQUE, (1,), dtype=np.float32)

    def get_default_action(self) -> np.ndarray:
        return np.zeros(1, dtype=np.float32)

    def render(self) -> None:
        return None


def make_rtpendulum(hz: float = 20.0, time_scale: Optional[float] = None,
                    ep_max_length: int = 200, act_buf_len: int = 1, flatten: bool = True,
                    seed: Optional[int] = None, **config: Any) -> gym.Env:
    """The real-time pendulum at ``hz`` time steps per wall-clock second.

    ``time_scale`` defaults to ``hz * 0.05`` (each time step is 0.05 s of pendulum time, as in
    Pendulum-v1). Further keyword arguments are rtgym config keys (``time_step_timeout_factor``,
    ``wait_on_done`` (default True: the clock pauses between episodes), ``benchmark``, ...).
    """
    if not float(hz) > 0:
        raise ValueError(f"make_rtpendulum(hz={hz!r}): must be > 0 time steps per second")
    step = 1.0 / float(hz)
    config.setdefault("wait_on_done", True)
    return make_realtime_env(
        PendulumInterface, flatten=flatten,
        interface_kwargs=dict(time_scale=hz * 0.05 if time_scale is None else time_scale,
                              seed=seed),
        time_step_duration=step, start_obs_capture=step, ep_max_length=int(ep_max_length),
        act_buf_len=int(act_buf_len), **config)


def register() -> None:
    """Register ``"rlpipe/RTPendulum-v0"`` with gymnasium (once)."""
    if RTPENDULUM_ID not in gym.registry:
        # nondeterministic: a step integrates the wall-clock time that passed, so the same seed
        # and actions give the same reset observation but steps that differ by clock jitter
        gym.register(RTPENDULUM_ID, entry_point="rlpipe.envs._rtpendulum:make_rtpendulum",
                     disable_env_checker=True, nondeterministic=True)
