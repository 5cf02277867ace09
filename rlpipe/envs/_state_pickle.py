"""Pickling env states for an exact resume, past `EzPickle`.

gymnasium's `EzPickle` (used by PettingZoo's MPE2, Box2D and MuJoCo envs) pickles an env as its
constructor arguments: unpickled, it is a fresh env that was never reset (MPE2's raw env then
has no `agent_selection`, and every episode in progress is lost). An env state must carry the
simulation itself, so `dumps_state` stores such objects as EzPickle's constructor call plus
their `__dict__`: unpickling builds a fresh env and then puts the saved attributes back. Its
rendering handles (pygame surfaces and fonts, which cannot be pickled and are no part of the
simulation) are the fresh env's own. `loads` is plain `pickle.loads`.
"""
from __future__ import annotations

import io
import logging
import pickle
from typing import Any

from gymnasium.utils import EzPickle

__all__ = ["dumps_state", "restart_unsaved_envs", "ENVS_NOT_SAVED"]

ENVS_NOT_SAVED = "envs_not_saved"
"""Key `dumps_state` sets in a state whose envs were saved as their constructor call only."""

log = logging.getLogger(__name__)
_warned = False  # the fallback is logged once per process


def _rebuild(cls: type, args: tuple, kwargs: dict) -> Any:
    return cls(*args, **kwargs)


def _set_dict(obj: Any, state: dict) -> None:
    obj.__dict__.update(state)


def _is_render_handle(value: Any) -> bool:
    return type(value).__module__.split(".", 1)[0] == "pygame"


class _StatePickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, EzPickle) and not isinstance(obj, type):
            args = (type(obj), tuple(obj._ezpickle_args), dict(obj._ezpickle_kwargs))
            state = {k: v for k, v in vars(obj).items() if not _is_render_handle(v)}
            return _rebuild, args, state, None, None, _set_dict
        return NotImplemented


def dumps_state(obj: dict) -> bytes:
    """`pickle.dumps(obj)`, with every EzPickle object saved by its attributes. Where those
    cannot be pickled (Box2D's SWIG world, say), the envs are saved as EzPickle saves them, with
    `obj[ENVS_NOT_SAVED] = True` so that the restoring side resets them (a resumed run starts
    new episodes: not exact), and a warning says so."""
    buffer = io.BytesIO()
    try:
        _StatePickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    except (TypeError, pickle.PicklingError, AttributeError) as err:
        global _warned
        if not _warned:
            _warned = True
            log.warning("env state: the envs' simulation cannot be pickled (%s); they are saved "
                        "as their constructor call, so a resumed run restarts their episodes "
                        "(not exact)", err)
        return pickle.dumps({**obj, ENVS_NOT_SAVED: True})
    return buffer.getvalue()


def restart_unsaved_envs(loaded: dict, backend: Any, label: str) -> None:
    """After restoring `loaded` (from `dumps_state`) into `backend`: where its envs were saved
    without their simulation they are fresh, never reset envs, so the backend resets each at its
    next step (that row is no transition) instead of stepping it."""
    if not loaded.get(ENVS_NOT_SAVED):
        return
    restart = getattr(backend, "restart_all_at_next_step", None)
    if restart is None:
        raise NotImplementedError(
            f"EnvManager.set_state(): the envs of {label} were saved without their simulation, "
            f"and this mode cannot restart them in place; resume with mode='sync'")
    restart()
