"""Real-time envs: any rtgym ``RealTimeGymInterface`` as a gymnasium env, with its overruns counted.

rtgym (``pip install "rlpipe[realtime]"``) runs an *elastic clock*: each ``step(a)`` returns the
observation captured at the end of the running time step and starts the next one with ``a``, so
the action chosen from an observation applies one time step later and the observation carries
the action buffer. When the caller comes back after the time step's end plus its elasticity
(``time_step_timeout_factor`` time steps), rtgym warns "Time-step timed out" and restarts the
clock: that is an **overrun**. :func:`make_realtime_env` counts them per env (never hides them):

- ``env.overrun_stats()``: ``{"time_steps", "overruns", "overrun_rate", "max_late_s"}``;
- ``info["rt_overruns"]`` / ``info["rt_time_steps"]`` in every step's info (counts so far);
- :func:`realtime_overruns`: the totals over every real-time env of this process (what the
  collector logs as ``collect/overrun_rate``).

A pause that the env asked for (``wait_on_done``, ``env.wait()``) is not an overrun, as in rtgym.
Registered with gymnasium as ``"rlpipe/RealTime-v0"`` (``interface=`` a class or
``"module:Class"`` string, plus rtgym config keys as keyword arguments).
"""
from __future__ import annotations

import functools
import importlib
import threading
import weakref
from typing import Any, Dict, Type

import gymnasium as gym

from rlpipe.envs._errors import MissingDependencyError

REALTIME_ID = "rlpipe/RealTime-v0"
_LIVE: "weakref.WeakSet[Any]" = weakref.WeakSet()  # every real-time env of this process
_CLOSED_TOTALS = {"time_steps": 0, "overruns": 0}  # of the envs closed so far
_LOCK = threading.Lock()


def _rtgym() -> Any:
    try:
        import rtgym.envs.real_time_env as rte
    except ImportError as err:
        raise MissingDependencyError(
            "real-time envs need rtgym: pip install \"rlpipe[realtime]\" (or pip install rtgym)"
        ) from err
    return rte


def _interface_class(interface: Any) -> Type:
    """A class, or a "package.module:Class" string naming one."""
    if isinstance(interface, str):
        module, _, name = interface.partition(":")
        if not name:
            raise ValueError(f"make_realtime_env(interface={interface!r}): a string must be "
                             f"'package.module:ClassName'")
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as err:
            raise ValueError(f"make_realtime_env(interface={interface!r}): cannot import "
                             f"{name} from {module}: {err}") from err
    if not isinstance(interface, type):
        raise TypeError(f"make_realtime_env: interface must be a RealTimeGymInterface subclass "
                        f"(or 'module:Class'), got {type(interface).__name__}")
    missing = [m for m in ("send_control", "reset", "get_obs_rew_terminated_info",
                           "get_observation_space", "get_action_space", "get_default_action")
               if not callable(getattr(interface, m, None))]
    if missing:
        raise TypeError(f"make_realtime_env: {interface.__qualname__} lacks the rtgym interface "
                        f"methods {missing}; subclass rtgym.RealTimeGymInterface")
    return interface


@functools.lru_cache(maxsize=1)
def _env_class() -> Type:
    """rtgym's RealTimeEnv with its clock decisions counted (built once rtgym is imported)."""
    rte = _rtgym()

    class CountedRealTimeEnv(rte.RealTimeEnv):
        """rtgym's RealTimeEnv (one thread per time step) counting its overruns."""

        def __init__(self, config: Dict[str, Any]) -> None:
            self.rt_time_steps = 0
            self.rt_overruns = 0
            self.rt_max_late_s = 0.0
            super().__init__(config)
            _LIVE.add(self)

        def _update_timestamps(self) -> None:
            # rtgym decides here, at the start of each time step: it goes on from the previous
            # step's nominal end (on time) or restarts the clock from now (timed out)
            end = self._RealTimeEnv__t_end
            waiting = self.is_waiting
            super()._update_timestamps()
            start = self._RealTimeEnv__t_start
            self.rt_time_steps += 1
            if start != end and not waiting:
                self.rt_overruns += 1
                self.rt_max_late_s = max(self.rt_max_late_s, start - end)

        def reset(self, seed: Any = None, options: Any = None) -> Any:
            # rtgym's reset hands the seed to the interface only; gymnasium's Env.reset seeds
            # the env's own np_random (what gymnasium's checker and users read)
            gym.Env.reset(self, seed=seed)
            return super().reset(seed=seed, options=options)

        def step(self, action: Any) -> Any:
            obs, rew, terminated, truncated, info = super().step(action)
            info = dict(info or {})
            info["rt_overruns"] = self.rt_overruns
            info["rt_time_steps"] = self.rt_time_steps
            return obs, rew, terminated, truncated, info

        def __reduce_ex__(self, protocol: Any) -> Any:
            # EnvManager.get_state() pickles its envs for an exact resume; a real-time env's
            # state is a running clock and its threads: a resumed run resets it instead
            raise NotImplementedError(
                "a real-time env (rtgym) cannot be captured: its state is the wall clock and "
                "its time-step thread; a resumed run resets it")

        def overrun_stats(self) -> Dict[str, float]:
            return _stats(self.rt_time_steps, self.rt_overruns, self.rt_max_late_s)

        def close(self) -> None:
            self._join_thread()
            with _LOCK:
                if self in _LIVE:
                    _LIVE.discard(self)
                    _CLOSED_TOTALS["time_steps"] += self.rt_time_steps
                    _CLOSED_TOTALS["overruns"] += self.rt_overruns
            super().close()

    return CountedRealTimeEnv


def _stats(steps: int, overruns: int, late: float = 0.0) -> Dict[str, float]:
    return {"time_steps": steps, "overruns": overruns,
            "overrun_rate": overruns / steps if steps else 0.0, "max_late_s": late}


def make_realtime_env(interface: Any, flatten: bool = False, interface_args: Any = (),
                      interface_kwargs: Dict[str, Any] | None = None, **config: Any) -> gym.Env:
    """A gymnasium env from an rtgym interface class and rtgym config keys.

    ``config`` takes the keys of rtgym's ``DEFAULT_CONFIG_DICT`` (``time_step_duration``,
    ``start_obs_capture``, ``time_step_timeout_factor``, ``ep_max_length``, ``act_buf_len``,
    ``act_in_obs``, ``reset_act_buf``, ``wait_on_done``, ``benchmark``, ...); unknown keys are
    an error. ``flatten=True`` flattens rtgym's Tuple observation (the interface's parts, then
    the action buffer, oldest first) into one Box. The env (or ``env.unwrapped``) has
    ``overrun_stats()``; see the module docstring.
    """
    rte = _rtgym()
    unknown = sorted(set(config) - set(rte.DEFAULT_CONFIG_DICT) - {"act_prepro_func",
                                                                    "obs_prepro_func"})
    if unknown:
        known = sorted(k for k in rte.DEFAULT_CONFIG_DICT if not k.startswith("interface"))
        raise TypeError(f"make_realtime_env: unknown rtgym config keys {unknown}; known: {known}")
    full = dict(rte.DEFAULT_CONFIG_DICT)
    full.update(config)
    full.update(interface=_interface_class(interface), interface_args=tuple(interface_args),
                interface_kwargs=dict(interface_kwargs or {}))
    for key in ("time_step_duration", "start_obs_capture"):
        if not float(full[key]) > 0:
            raise ValueError(f"make_realtime_env({key}={full[key]!r}): must be > 0 seconds")
    env = _env_class()(full)
    if flatten:
        env = gym.wrappers.FlattenObservation(env)
    return env


def realtime_overruns() -> Dict[str, float]:
    """Time steps and overruns over every real-time env of this process (live and closed)."""
    with _LOCK:
        envs = list(_LIVE)
        steps = _CLOSED_TOTALS["time_steps"] + sum(e.rt_time_steps for e in envs)
        overruns = _CLOSED_TOTALS["overruns"] + sum(e.rt_overruns for e in envs)
        late = max((e.rt_max_late_s for e in envs), default=0.0)
    return _stats(steps, overruns, late)


def register() -> None:
    """Register ``"rlpipe/RealTime-v0"`` with gymnasium (once)."""
    if REALTIME_ID not in gym.registry:
        # nondeterministic: what a step observes depends on when the clock let it run
        gym.register(REALTIME_ID, entry_point="rlpipe.envs._realtime:make_realtime_env",
                     disable_env_checker=True, nondeterministic=True)
