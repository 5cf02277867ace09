"""PettingZoo parallel envs as sub-envs of the single-agent vector machinery.

`resolve_parallel` turns what a user names (a factory, ``"module:factory"``, or a module path
such as ``"mpe2/simple_spread_v3"``) into a picklable `ParallelSource`. `ParallelAdapter`
presents one parallel env as a gymnasium env whose observation is the packed Dict of
`_agent_spaces` (per-agent arrays with an agent axis) and whose reward is the team reward, so
the `EnvManager` backends (sync loop, async subprocesses, crash recovery, SAME_STEP final
observations) carry multi-agent steps unchanged. An episode ends for the vector machinery when
no agent is left in it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from rlpipe.envs._agent_spaces import MASK_KEY, OBS_KEY, AgentLayout
from rlpipe.envs._errors import MissingDependencyError, UnknownEnvError

__all__ = ["AdapterFactory", "ParallelAdapter", "ParallelSource", "resolve_parallel"]

_INSTALL = 'install the multi-agent extra: pip install "rlpipe[marl]"'


@dataclass(frozen=True)
class ParallelSource:
    """How to build one parallel env: a factory or an import path, plus keyword arguments."""

    target: str | Callable[..., Any]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""

    def make(self) -> Any:
        """One parallel env (an AEC env is converted with PettingZoo's ``aec_to_parallel``)."""
        factory = _import_factory(self.target) if isinstance(self.target, str) else self.target
        return to_parallel(factory(**self.kwargs), self.label)


def resolve_parallel(env: Any, env_kwargs: Mapping[str, Any] | None = None) -> ParallelSource:
    """A `ParallelSource` for a factory, a ``"module:factory"`` string or a module path
    (``"mpe2/simple_spread_v3"`` or ``"mpe2.simple_spread_v3"``: its ``parallel_env``, else
    its AEC ``env``). The path is checked here, so a typo fails before any env is built."""
    kwargs = dict(env_kwargs or {})
    if callable(env) and not isinstance(env, str):
        return ParallelSource(env, kwargs, getattr(env, "__qualname__", None) or repr(env))
    if not isinstance(env, str) or not env:
        raise TypeError(f"MultiAgentEnvManager: env must be a factory returning a PettingZoo "
                        f"ParallelEnv, a 'module:factory' string or a module path such as "
                        f"'mpe2/simple_spread_v3'; got {env!r}")
    _import_factory(env)
    return ParallelSource(env, kwargs, repr(env))


def _import_factory(target: str) -> Callable[..., Any]:
    module_name, _, attr = target.partition(":")
    module_name = module_name.replace("/", ".")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name.split(".")[0]:
            raise MissingDependencyError(
                f"multi-agent env {target!r} needs the package {exc.name!r}, which is not "
                f"installed (for PettingZoo and MPE2: {_INSTALL})") from exc
        raise UnknownEnvError(f"multi-agent env {target!r}: no module {module_name!r} "
                              f"({exc}); name a module with parallel_env/env, e.g. "
                              f"'mpe2/simple_spread_v3', or 'module:factory'") from exc
    names = [attr] if attr else ["parallel_env", "env"]
    for name in names:
        factory = getattr(module, name, None)
        if callable(factory):
            return factory
    raise UnknownEnvError(f"multi-agent env {target!r}: module {module_name!r} has no callable "
                          f"{' or '.join(repr(n) for n in names)}")


def to_parallel(env: Any, label: str) -> Any:
    """`env` as a parallel env: an AEC env through ``aec_to_parallel``; anything else must have
    the parallel API (``possible_agents``, ``reset``, ``step``, per-agent space methods)."""
    try:
        from pettingzoo.utils.env import AECEnv
    except ImportError as exc:
        raise MissingDependencyError(f"multi-agent envs need pettingzoo; {_INSTALL}") from exc
    if isinstance(env, AECEnv):
        if not env.metadata.get("is_parallelizable", False):
            raise ValueError(f"multi-agent env {label} is an AEC env without metadata "
                             f"'is_parallelizable': PettingZoo's aec_to_parallel is only safe for "
                             f"envs that update once per cycle. Give a parallel env instead")
        from pettingzoo.utils.conversions import aec_to_parallel

        env = aec_to_parallel(env)
    missing = [name for name in ("possible_agents", "reset", "step", "observation_space",
                                 "action_space") if not hasattr(env, name)]
    if missing:
        raise TypeError(f"multi-agent env {label} built a {type(env).__name__}, which lacks "
                        f"{missing}; the factory must return a PettingZoo ParallelEnv (or AEC env)")
    return env


@dataclass(frozen=True)
class AdapterFactory:
    """Builds one `ParallelAdapter` (picklable: async workers call it in their process)."""

    source: ParallelSource
    layout: AgentLayout

    def __call__(self) -> ParallelAdapter:
        return ParallelAdapter(self.source.make(), self.layout)

    def __repr__(self) -> str:
        return self.source.label


class ParallelAdapter(gym.Env):
    """One parallel env as a gymnasium env over the packed observation (module docstring).

    Only the agents in the episode are sent actions (the rows of the others are ignored); the
    reward is the sum of the agents' rewards of the step, and the episode is over when no agent
    is left (``terminated``, or ``truncated`` when an agent's time ran out).
    """

    def __init__(self, env: Any, layout: AgentLayout) -> None:
        self.par = env
        self.layout = layout
        self.observation_space = layout.packed_space
        self.action_space = layout.stacked_action_space
        self._index = {a: k for k, a in enumerate(layout.agents)}
        self._present: list[str] = []
        n = len(layout.agents)
        self._obs_shape = (n, *layout.observation_space.shape)
        self._zeros_i8 = np.zeros(n, dtype=np.int8)
        self._zeros_f32 = np.zeros(n, dtype=np.float32)

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray], dict]:
        super().reset(seed=seed)  # the adapter's own np_random, as gymnasium's API asks
        obs, infos = self.par.reset(seed=seed, options=options)
        if seed is not None:
            for k, agent in enumerate(self.layout.agents):
                self.par.action_space(agent).seed(seed + k)
        self._present = self._in_episode(list(self.par.agents), {}, {})
        return self._pack(obs, infos, None, None, None), {}

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        acting, index = self._present, self._index
        if not acting:
            raise RuntimeError("ParallelAdapter.step() with no agent in the episode; the env "
                               "manager resets an env whose agents are all done")
        obs, rew, term, trunc, infos = self.par.step({a: action[index[a]] for a in acting})
        reward = self._zeros_f32.copy()
        terminated, truncated = self._zeros_i8.copy(), self._zeros_i8.copy()
        for a in acting:
            k = index[a]
            reward[k] = rew.get(a, 0.0)
            terminated[k] = bool(term.get(a, False))
            truncated[k] = bool(trunc.get(a, False))
        self._present = self._in_episode(list(self.par.agents), term, trunc)
        packed = self._pack(obs, infos, reward, terminated, truncated)
        over = not self._present
        timed_out = over and bool(truncated.any())
        return packed, float(reward.sum()), over and not timed_out, timed_out, {}

    def _in_episode(self, agents: list[str], term: dict, trunc: dict) -> list[str]:
        index = self._index
        unknown = [a for a in agents if a not in index]
        if unknown:
            raise ValueError(f"parallel env has agents {unknown} that are not in its "
                             f"possible_agents {list(index)}; list every agent there")
        return [a for a in agents if not (term.get(a, False) or trunc.get(a, False))]

    def _pack(self, obs: dict, infos: dict, reward: np.ndarray | None,
              terminated: np.ndarray | None, truncated: np.ndarray | None) -> dict[str, np.ndarray]:
        layout, index = self.layout, self._index
        table = np.zeros(self._obs_shape, dtype=layout.observation_space.dtype)
        masks = None
        if layout.mask_source is not None:
            masks = np.ones((len(index), layout.n_actions), dtype=np.int8)
        for agent, o in obs.items():
            k = index[agent]
            if layout.obs_in_dict:
                if masks is not None and layout.mask_source == "obs":
                    masks[k] = o[MASK_KEY]
                o = o[OBS_KEY]
            table[k] = o
        if layout.mask_source == "info":
            for agent, info in infos.items():
                if info and MASK_KEY in info:
                    masks[index[agent]] = info[MASK_KEY]
        present = self._zeros_i8.copy()
        for a in self._present:
            present[index[a]] = 1
        packed = {  # new arrays every time: the caller may keep (or change) what it gets
            "obs": table, "mask": present,
            "reward": self._zeros_f32.copy() if reward is None else reward,
            "terminated": self._zeros_i8.copy() if terminated is None else terminated,
            "truncated": self._zeros_i8.copy() if truncated is None else truncated,
        }
        if layout.state_space is not None:
            packed["state"] = np.asarray(self.par.state(), dtype=layout.state_space.dtype)
        if masks is not None:
            packed["action_mask"] = masks
        return packed

    def close(self) -> None:
        self.par.close()
