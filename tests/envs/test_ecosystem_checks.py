"""Every env that rlpipe registers or wraps passes its ecosystem's own API test: gymnasium's
`check_env` for single-agent envs (and for the adapter that carries a multi-agent env through
`EnvManager`), PettingZoo's `parallel_api_test` for multi-agent envs. A case whose optional
package is missing is skipped, naming the extra that installs it.

Render checks are skipped: rlpipe adds no renderer, and gymnasium's check would open a window
for every "human" render mode the wrapped env declares.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import warnings
from typing import Any, Callable

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import rlpipe.envs  # noqa: F401  (registers the rlpipe/* gymnasium ids)
from rlpipe.envs._registry import resolve_env

# the extra that installs each optional package
EXTRA = {"Box2D": "box2d", "ale_py": "atari", "minigrid": "minigrid", "rtgym": "realtime",
         "pettingzoo": "marl", "mpe2": "marl"}


def _needs(*modules: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        extras = sorted({EXTRA[m] for m in missing})
        pytest.skip(f"needs {', '.join(missing)}: pip install 'rlpipe[{','.join(extras)}]'")


def _registered(name: str, **kwargs: Any) -> Callable[[], gym.Env]:
    return lambda: resolve_env(name, kwargs).make()


def _gym(gym_id: str, **kwargs: Any) -> Callable[[], gym.Env]:
    return lambda: gym.make(gym_id, **kwargs)


def _realtime_pendulum() -> gym.Env:
    from rlpipe.envs import PendulumInterface

    return gym.make("rlpipe/RealTime-v0", interface=PendulumInterface, flatten=True,
                    time_step_duration=0.02, start_obs_capture=0.02, ep_max_length=50)


# (case id, env builder, the optional packages it needs)
SINGLE_AGENT = [
    ("MaskedGrid", _gym("rlpipe/MaskedGrid-v0"), ()),
    ("MaskedGrid-no-mask", _gym("rlpipe/MaskedGrid-v0", expose_mask=False), ()),
    ("CartPoleNoVel", _gym("rlpipe/CartPoleNoVel-v1"), ()),
    ("PendulumNoVel", _gym("rlpipe/PendulumNoVel-v1"), ()),
    ("RememberFirst", _gym("rlpipe/RememberFirst-v0"), ()),
    ("RTPendulum", _gym("rlpipe/RTPendulum-v0", hz=50.0, ep_max_length=50), ("rtgym",)),
    ("RealTime", _realtime_pendulum, ("rtgym",)),
    *[(f"short-{name}", _registered(name), ("Box2D",) if "lunar" in name else ())
      for name in ("cartpole", "acrobot", "pendulum", "lunarlander", "lunarlandercontinuous")],
    *[(f"atari-{game}-{preset}", _registered(f"atari-{game}", atari_preset=preset), ("ale_py",))
      for game in ("pong", "breakout") for preset in ("eval", "train")],
]
MINIGRID_IDS = ("MiniGrid-DoorKey-5x5-v0", "MiniGrid-DoorKey-6x6-v0", "MiniGrid-DoorKey-8x8-v0",
                "MiniGrid-Empty-5x5-v0", "MiniGrid-Empty-6x6-v0", "MiniGrid-Empty-8x8-v0",
                "MiniGrid-Empty-Random-5x5-v0", "MiniGrid-Unlock-v0",
                "MiniGrid-KeyCorridorS3R1-v0", "MiniGrid-MemoryS7-v0", "BabyAI-GoToRedBallGrey-v0")
SINGLE_AGENT += [(gym_id, _registered(gym_id), ("minigrid",)) for gym_id in MINIGRID_IDS]

MULTIWALKER_KWARGS = dict(n_walkers=3, shared_reward=False, terminate_on_fall=False,
                          remove_on_fall=True, max_cycles=500)  # the multiwalker entry's
# (case id, "module:factory" or module path as MultiAgentEnvManager takes it, kwargs, needs)
MULTI_AGENT = [
    ("multiwalker", "rlpipe.zoo.multiwalker._env:multiwalker_env", MULTIWALKER_KWARGS,
     ("pettingzoo", "Box2D")),
    ("simple_spread", "mpe2/simple_spread_v3", dict(N=3, max_cycles=25), ("pettingzoo", "mpe2")),
    ("simple_spread-continuous", "mpe2/simple_spread_v3",
     dict(N=3, max_cycles=25, continuous_actions=True), ("pettingzoo", "mpe2")),
]


def _check(env: gym.Env) -> None:
    with warnings.catch_warnings():
        # gymnasium suggests checking env.unwrapped; the wrappers are what rlpipe adds, so the
        # wrapped env is the one to check
        warnings.filterwarnings("ignore", message=".*different from the unwrapped version")
        warnings.filterwarnings("ignore", message=".*Time-step timed out")  # rtgym's, counted
        check_env(env, skip_render_check=True)


@pytest.mark.filterwarnings("ignore:.*we recommend using a symmetric and normalized space")
@pytest.mark.parametrize("make, needs", [pytest.param(m, n, id=i) for i, m, n in SINGLE_AGENT])
def test_gymnasium_check_env(make, needs):
    _needs(*needs)
    env = make()
    try:
        _check(env)
    finally:
        env.close()


def _names_rlpipe_registers() -> tuple[list[str], list[str]]:
    """(short names, rlpipe/* gymnasium ids) that importing rlpipe.envs registers, read in a
    fresh process (tests in this one may have registered names of their own)."""
    code = ("import json, gymnasium, rlpipe.envs; print(json.dumps([sorted(rlpipe.envs."
            "registered_envs()), sorted(i for i in gymnasium.registry if i.startswith('rlpipe/'))]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    names, ids = json.loads(out.stdout.strip().splitlines()[-1])
    return names, ids


def test_every_registered_env_is_checked():
    names, ids = _names_rlpipe_registers()
    checked = {i.removeprefix("short-") for i, _, _ in SINGLE_AGENT if i.startswith("short-")}
    checked |= {i.rsplit("-", 1)[0] for i, _, _ in SINGLE_AGENT if i.startswith("atari-")}
    assert names and set(names) <= checked
    source = open(__file__).read()
    assert ids and [i for i in ids if f'"{i}"' not in source] == []


@pytest.mark.parametrize("env_id, kwargs, needs",
                         [pytest.param(e, k, n, id=i) for i, e, k, n in MULTI_AGENT])
def test_pettingzoo_parallel_api_test(env_id, kwargs, needs):
    _needs(*needs)
    from pettingzoo.test import parallel_api_test

    from rlpipe.envs._parallel import resolve_parallel

    env = resolve_parallel(env_id, kwargs).make()
    try:
        parallel_api_test(env, num_cycles=200)
    finally:
        env.close()


@pytest.mark.parametrize("env_id, kwargs, needs",
                         [pytest.param(e, k, n, id=i) for i, e, k, n in MULTI_AGENT])
def test_multi_agent_adapter_passes_check_env(env_id, kwargs, needs):
    """The gymnasium env that carries one parallel env through EnvManager's backends."""
    _needs(*needs)
    from rlpipe.envs import MultiAgentEnvManager
    from rlpipe.envs._parallel import AdapterFactory, resolve_parallel

    layout = MultiAgentEnvManager(env_id, n_envs=1, env_kwargs=kwargs).layout
    env = AdapterFactory(resolve_parallel(env_id, kwargs), layout)()
    try:
        _check(env)
    finally:
        env.close()
