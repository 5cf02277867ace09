"""Public surface of rlpipe.envs: names, registry, errors, argument checks, lifecycle."""

import importlib.util
import sys

import gymnasium as gym
import numpy as np
import pytest

import rlpipe.envs as envs
from rlpipe.envs import (
    EnvManager,
    MissingDependencyError,
    UnknownEnvError,
    register_env,
    registered_envs,
    unregister_env,
)


def test_all_lists_the_public_names():
    assert sorted(envs.__all__) == [
        "BatchObs", "EnvFailureError", "EnvManager", "MaskObservation", "MissingDependencyError",
        "MultiAgentEnvManager", "MultiAgentStepResult", "PendulumInterface", "StepResult",
        "UnknownEnvError", "empty_segments", "flat_mask", "make_realtime_env", "make_rtpendulum",
        "mask_segments", "obs_to_tree", "realtime_overruns", "register_env", "registered_envs",
        "sample_valid_actions", "unregister_env",
    ]
    for name in envs.__all__:
        assert hasattr(envs, name)


def test_builtin_short_names_map_to_gymnasium_ids():
    names = registered_envs()
    assert names["cartpole"] == ("CartPole-v1", {})
    assert names["acrobot"] == ("Acrobot-v1", {})
    assert names["pendulum"] == ("Pendulum-v1", {})
    assert names["lunarlander"] == ("LunarLander-v3", {})
    assert names["lunarlandercontinuous"] == ("LunarLander-v3", {"continuous": True})
    for target, _ in names.values():
        if isinstance(target, str):
            gym.spec(target)  # every built-in id exists in this gymnasium
    assert callable(names["atari-pong"][0])  # an Atari factory (frames preprocessed for DQN)


@pytest.mark.parametrize(
    "name, obs_shape, action_space",
    [
        ("cartpole", (4,), gym.spaces.Discrete(2)),
        ("acrobot", (6,), gym.spaces.Discrete(3)),
        ("pendulum", (3,), None),
        ("lunarlander", (8,), gym.spaces.Discrete(4)),
        ("LunarLanderContinuous", (8,), None),
    ],
)
def test_short_names_build_envs(name, obs_shape, action_space):
    with EnvManager(name, n_envs=2, seed=0, mode="sync") as m:
        obs = m.reset()
        assert obs.shape == (2, *obs_shape)
        assert m.observation_space.shape == obs_shape
        if action_space is not None:
            assert m.action_space == action_space
        else:
            assert isinstance(m.action_space, gym.spaces.Box)
        result = m.step(m.batch_action_space.sample())
        assert result.obs.shape == (2, *obs_shape)


def test_register_env_with_factory_and_kwargs():
    register_env("test-short-cartpole", lambda max_episode_steps: gym.make(
        "CartPole-v1", max_episode_steps=max_episode_steps), max_episode_steps=3)
    try:
        with pytest.raises(ValueError, match="already registered"):
            register_env("test-short-cartpole", "CartPole-v1")
        with EnvManager("TEST-short-cartpole", n_envs=1, seed=0, mode="sync") as m:
            m.reset()
            truncated = [m.step(np.array([0])).truncated[0] for _ in range(3)]
        assert truncated == [False, False, True]
        register_env("test-short-cartpole", "Acrobot-v1", overwrite=True)
        assert registered_envs()["test-short-cartpole"] == ("Acrobot-v1", {})
    finally:
        unregister_env("test-short-cartpole")
    assert "test-short-cartpole" not in registered_envs()


def test_env_kwargs_override_registered_kwargs():
    with EnvManager("lunarlandercontinuous", n_envs=1, mode="sync",
                    env_kwargs={"continuous": False}) as m:
        assert m.action_space == gym.spaces.Discrete(4)


@pytest.mark.parametrize(
    "bad, suggestion", [("CartPol-v1", "CartPole-v1"), ("cartpol", "cartpole")]
)
def test_unknown_env_names_close_matches(bad, suggestion):
    with pytest.raises(UnknownEnvError) as info:
        EnvManager(bad)
    message = str(info.value)
    assert repr(bad) in message and repr(suggestion) in message


def test_missing_box2d_gives_pip_command(monkeypatch):
    for name in [m for m in sys.modules if m.startswith("gymnasium.envs.box2d")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "Box2D", None)  # makes `import Box2D` fail
    with pytest.raises(MissingDependencyError, match=r'pip install "rlpipe\[box2d\]"'):
        EnvManager("lunarlander", mode="sync")


def test_minigrid_ids_without_minigrid_name_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "minigrid" else real(name, *a))
    with pytest.raises(MissingDependencyError,
                       match=r"'MiniGrid-Empty-5x5-v0'.*pip install 'rlpipe\[minigrid\]'"):
        EnvManager("MiniGrid-Empty-5x5-v0", n_envs=1)
    with pytest.raises(MissingDependencyError, match="BabyAI-GoTo-v0.*rlpipe\\[minigrid\\]"):
        EnvManager("BabyAI-GoTo-v0", n_envs=1)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_envs": 0}, "n_envs"),
        ({"seed": -1}, "seed"),
        ({"mode": "threads"}, "mode"),
        ({"step_timeout": 1.0, "mode": "sync"}, "mode='async'"),
        ({"step_timeout": 1.0, "mode": "native"}, "mode='async'"),
        ({"step_timeout": 0, "mode": "async"}, "step_timeout"),
        ({"max_restarts": -1}, "max_restarts"),
    ],
)
def test_bad_arguments_are_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        EnvManager("cartpole", **kwargs)


def test_native_mode_needs_a_vector_entry_point():
    with pytest.raises(ValueError, match="no vector entry point"):
        EnvManager("acrobot", mode="native")
    with pytest.raises(ValueError, match="factory"):
        EnvManager(lambda: gym.make("CartPole-v1"), mode="native")


def test_auto_mode_picks_native_only_where_it_pays():
    with EnvManager("cartpole", n_envs=8) as m:
        assert m.mode == "native"
    with EnvManager("cartpole", n_envs=1) as m:
        assert m.mode == "sync"
    with EnvManager("acrobot", n_envs=8) as m:
        assert m.mode == "sync"
    with EnvManager(lambda: gym.make("CartPole-v1"), n_envs=8) as m:
        assert m.mode == "sync"


@pytest.mark.skipif(importlib.util.find_spec("ale_py") is None,
                    reason='ale-py not installed: pip install "rlpipe[atari]"')
def test_without_envpool_auto_runs_atari_frames_one_process_per_env(monkeypatch):
    # ale-py's emulated, preprocessed frames cost 0.7-2 ms a step: mode "auto" gives each env a
    # process where there are several envs and cores (EnvPool, where installed, comes first)
    from rlpipe.envs import _envpool, _manager

    monkeypatch.setattr(_envpool, "envpool_installed", lambda: False)
    monkeypatch.setattr(_manager.os, "cpu_count", lambda: 4)
    with EnvManager("atari-pong", n_envs=2, seed=0, env_kwargs={"atari_preset": "train"}) as m:
        assert m.mode == "async"
        m.reset()
        assert m.step(np.zeros(2, np.int64)).obs.shape == (2, 4, 84, 84)
    with EnvManager("atari-pong", n_envs=1, seed=0) as m:
        assert m.mode == "sync"
    with EnvManager("ALE/Pong-v5", n_envs=2, seed=0) as m:  # raw 210x160 frames, an id
        assert m.mode == "sync"
    monkeypatch.setattr(_manager.os, "cpu_count", lambda: 1)
    with EnvManager("atari-pong", n_envs=2, seed=0) as m:
        assert m.mode == "sync"


def test_factory_must_return_an_env():
    with pytest.raises(TypeError, match="gymnasium.Env"):
        EnvManager(lambda: "not an env", mode="sync")


def test_step_before_reset_and_after_close():
    m = EnvManager("cartpole", n_envs=2, mode="sync")
    with pytest.raises(RuntimeError, match="before reset"):
        m.step(np.zeros(2, dtype=np.int64))
    m.reset()
    m.close()
    m.close()  # idempotent
    assert m.closed
    with pytest.raises(RuntimeError, match="after close"):
        m.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(RuntimeError, match="after close"):
        m.reset()


def test_unsupported_space_is_rejected():
    class TextEnv(gym.Env):
        observation_space = gym.spaces.Text(5)
        action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            return "hello", {}

    with pytest.raises(TypeError, match="Text"):
        EnvManager(TextEnv, mode="sync")


def test_sub_envs_must_share_spaces():
    sizes = iter([2, 3])
    with pytest.raises(RuntimeError, match="same spaces"):
        EnvManager(lambda: gym.make("CartPole-v1") if next(sizes) == 2 else gym.make("Acrobot-v1"),
                   n_envs=2, mode="sync")


@pytest.mark.parametrize("mode", ["sync", "async", "native"])
def test_wrong_number_of_actions_is_rejected_in_every_mode(mode):
    with EnvManager("cartpole", n_envs=2, mode=mode) as m:
        m.reset()
        with pytest.raises(ValueError, match="expected 2 actions"):
            m.step(np.zeros(3, dtype=np.int64))
        assert m.restarts == 0
