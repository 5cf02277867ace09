"""Short environment names (``"cartpole"``) and how one environment is built from a source."""

from __future__ import annotations

import difflib
import functools
import importlib.util
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from gymnasium.error import DependencyNotInstalled

from rlpipe.envs._errors import MissingDependencyError, UnknownEnvError
from rlpipe.envs._minigrid import INSTALL as MINIGRID_INSTALL
from rlpipe.envs._minigrid import is_minigrid_id, make_minigrid

__all__ = ["EnvSource", "register_env", "registered_envs", "resolve_env", "unregister_env"]

EnvFactory = Callable[..., gym.Env]

# gymnasium entry-point fragment -> the rlpipe extra that installs it.
_EXTRAS = {"box2d": "box2d", "mujoco": "mujoco", "ale_py": "atari", "atari": "atari"}


@dataclass(frozen=True)
class _Registration:
    target: str | EnvFactory
    kwargs: Mapping[str, Any]


_REGISTRY: dict[str, _Registration] = {}


def register_env(
    name: str, id_or_factory: str | EnvFactory, *, overwrite: bool = False, **kwargs: Any
) -> None:
    """Register a short name for a gymnasium id or an env factory.

    ``kwargs`` are passed to ``gymnasium.make`` (or to the factory) each time the name is used;
    ``EnvManager(..., env_kwargs=...)`` adds to and overrides them. Names are case-insensitive.
    Registering a name that exists raises ``ValueError`` unless ``overwrite=True``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"register_env: name must be a non-empty string, got {name!r}")
    if not (isinstance(id_or_factory, str) or callable(id_or_factory)):
        raise TypeError(
            f"register_env({name!r}, ...): expected a gymnasium id (str) or a callable returning "
            f"a gymnasium.Env, got {type(id_or_factory).__name__}"
        )
    key = name.lower()
    if key in _REGISTRY and not overwrite:
        raise ValueError(
            f"register_env: the name {name!r} is already registered (as "
            f"{_describe(_REGISTRY[key].target)}); pass overwrite=True to replace it"
        )
    _REGISTRY[key] = _Registration(id_or_factory, dict(kwargs))


def unregister_env(name: str) -> None:
    """Remove a short name registered with :func:`register_env` (``KeyError`` if unknown)."""
    key = name.lower()
    if key not in _REGISTRY:
        raise KeyError(f"unregister_env: no environment is registered as {name!r}")
    del _REGISTRY[key]


def registered_envs() -> dict[str, tuple[str | EnvFactory, dict[str, Any]]]:
    """The registered short names: ``{name: (id_or_factory, kwargs)}``."""
    return {k: (r.target, dict(r.kwargs)) for k, r in sorted(_REGISTRY.items())}


@dataclass(frozen=True)
class EnvSource:
    """How to build one sub-environment: a gymnasium id or a factory, plus keyword arguments.

    Picklable (with cloudpickle for lambdas), so async workers can build their own env.
    """

    target: str | EnvFactory
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""

    @property
    def gym_id(self) -> str | None:
        return self.target if isinstance(self.target, str) else None

    def make(self) -> gym.Env:
        """Build one env; a missing optional package raises :class:`MissingDependencyError`."""
        try:
            if isinstance(self.target, str):
                env = gym.make(self.target, **self.kwargs)
            else:
                env = self.target(**self.kwargs)
        except DependencyNotInstalled as exc:
            raise MissingDependencyError(install_hint(self, exc)) from exc
        if not isinstance(env, gym.Env):
            raise TypeError(
                f"env factory {self.label} returned {type(env).__name__}, expected a "
                f"gymnasium.Env (a zero-argument callable that builds one environment)"
            )
        return env


def resolve_env(env: str | EnvFactory, env_kwargs: Mapping[str, Any] | None = None) -> EnvSource:
    """Turn a short name, gymnasium id or factory into an :class:`EnvSource`.

    A ``MiniGrid-*`` or ``BabyAI-*`` id needs no import first: it is built by
    ``make_minigrid`` (minigrid imported, the mission text left out of the observation).

    Raises :class:`UnknownEnvError` naming the id and its close matches.
    """
    extra = dict(env_kwargs or {})
    if callable(env) and not isinstance(env, str):
        return EnvSource(env, extra, _describe(env))
    if not isinstance(env, str):
        raise TypeError(
            f"env must be a gymnasium id, a registered short name or a factory, "
            f"got {type(env).__name__}"
        )
    reg = _REGISTRY.get(env.lower())
    if reg is not None:
        return EnvSource(reg.target, {**reg.kwargs, **extra}, f"{env!r} ({_describe(reg.target)})")
    if is_minigrid_id(env):
        return _minigrid_source(env, extra)
    if env.startswith("ALE/") and importlib.util.find_spec("ale_py") is not None:
        import ale_py  # its ids are known to gymnasium once it is imported

        gym.register_envs(ale_py)
    try:
        gym.spec(env)
    except gym.error.Error as exc:
        # without ale-py, an Atari id can still run in mode="envpool" (EnvPool has the games)
        if not (env.startswith("ALE/") and importlib.util.find_spec("envpool") is not None):
            raise UnknownEnvError(_unknown_message(env)) from exc
    return EnvSource(env, extra, repr(env))


def _minigrid_source(env: str, kwargs: dict[str, Any]) -> EnvSource:
    """A MiniGrid or BabyAI id, built without its mission text (see `_minigrid`)."""
    if importlib.util.find_spec("minigrid") is None:
        raise MissingDependencyError(
            f"environment {env!r} is a MiniGrid id and needs the minigrid package, which is "
            f"not installed; install it with: {MINIGRID_INSTALL}")
    import minigrid  # noqa: F401  (registers its ids with gymnasium)

    try:
        gym.spec(env)
    except gym.error.Error as exc:
        raise UnknownEnvError(_unknown_message(env)) from exc
    return EnvSource(functools.partial(make_minigrid, env), kwargs,
                     f"{env!r} (MiniGrid, mission text left out)")


def _describe(target: str | EnvFactory) -> str:
    if isinstance(target, str):
        return target
    return getattr(target, "__qualname__", None) or repr(target)


def _unknown_message(env: str) -> str:
    close = _close_ids(env, [*_REGISTRY, *gym.registry])
    hint = f" Close matches: {', '.join(repr(c) for c in close)}." if close else ""
    return (
        f"unknown environment {env!r}: it is neither a short name registered with "
        f"rlpipe.envs.register_env ({', '.join(sorted(_REGISTRY))}) nor a gymnasium id.{hint} "
        f"Environments from other packages must be imported first (e.g. `import ale_py`)."
    )


def _close_ids(env: str, known: list[str], n: int = 3) -> list[str]:
    """The known ids whose name (without its ``-vN`` version) is close to `env`'s, the one
    closest to `env` as typed first: a typo (CartPol-v1) or another version (CartPole-v2) gets
    CartPole-v1, while the version suffix alone makes nothing close (Nope-v0 is not Hopper-v5)."""
    def name(env_id: str) -> str:
        return re.sub(r"-v\d+$", "", env_id.lower())

    by_name: dict[str, list[str]] = {}
    for env_id in known:
        by_name.setdefault(name(env_id), []).append(env_id)
    names = difflib.get_close_matches(name(env), list(by_name), n=n, cutoff=0.8)
    ids = [env_id for found in names for env_id in by_name[found]]
    ratio = {i: difflib.SequenceMatcher(None, env.lower(), i.lower()).ratio() for i in ids}
    return sorted(ids, key=lambda i: -ratio[i])[:n]


def install_hint(source: EnvSource, exc: Exception) -> str:
    entry = ""
    if source.gym_id is not None:
        entry_point = gym.spec(source.gym_id).entry_point
        entry = entry_point if isinstance(entry_point, str) else _describe(entry_point)
    extra = next((v for k, v in _EXTRAS.items() if k in entry), None)
    if extra is None:
        return f"environment {source.label} needs a package that is not installed: {exc}"
    return (
        f"environment {source.label} needs the optional dependency group {extra!r}, which is not "
        f'installed. Install it with: pip install "rlpipe[{extra}]"  (gymnasium said: {exc})'
    )


for _name, _target, _kwargs in (
    ("cartpole", "CartPole-v1", {}),
    ("acrobot", "Acrobot-v1", {}),
    ("pendulum", "Pendulum-v1", {}),
    ("lunarlander", "LunarLander-v3", {}),
    ("lunarlandercontinuous", "LunarLander-v3", {"continuous": True}),
):
    register_env(_name, _target, **_kwargs)


def _make_atari(game: str, **kwargs: Any) -> gym.Env:
    from rlpipe.envs._atari import make_atari  # ale-py is optional: import on use

    return make_atari(game, **kwargs)


for _game in ("Pong", "Breakout"):
    register_env(f"atari-{_game.lower()}", functools.partial(_make_atari, f"ALE/{_game}-v5"))
