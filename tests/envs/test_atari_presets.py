"""ATARI_PRESETS is the one place that sets Atari preprocessing, for ale-py and EnvPool alike."""
import importlib.util

import numpy as np
import pytest

from rlpipe.envs._atari_presets import ATARI_PRESETS
from rlpipe.envs._envpool import envpool_options
from rlpipe.envs._registry import resolve_env

needs_ale = pytest.mark.skipif(importlib.util.find_spec("ale_py") is None,
                               reason='ale-py not installed: pip install "rlpipe[atari]"')


def test_envpool_options_follow_the_preset_for_short_names_and_ids():
    assert envpool_options(resolve_env("atari-pong")) == ATARI_PRESETS["eval"]
    train = envpool_options(resolve_env("atari-pong", {"atari_preset": "train"}))
    assert train == ATARI_PRESETS["train"] and train["episodic_life"]
    # an ALE id's other kwargs go to envpool.make over the preset
    assert envpool_options(resolve_env("ALE/Pong-v5", {"noop_max": 5}))["noop_max"] == 5
    with pytest.raises(ValueError, match="must be one of"):
        envpool_options(resolve_env("atari-pong", {"atari_preset": "paper"}))


@needs_ale
def test_ale_py_frames_take_the_presets_settings():
    env = resolve_env("atari-pong").make()
    try:
        ale = env.unwrapped.ale
        common = ATARI_PRESETS["eval"]
        assert ale.getFloat("repeat_action_probability") == common["repeat_action_probability"]
        assert ale.getInt("max_num_frames_per_episode") == (common["max_episode_steps"]
                                                            * common["frame_skip"])
        assert env.unwrapped._frameskip == common["frame_skip"]
        obs, _ = env.reset(seed=0)
        assert obs.shape == (common["stack_num"], 84, 84) and obs.dtype == np.uint8
    finally:
        env.close()


@needs_ale
@pytest.mark.parametrize("name", ["eval", "train"])
def test_ale_py_takes_both_presets(name):
    from rlpipe.envs._atari_lives import AtariLives

    env = resolve_env("atari-breakout", {"atari_preset": name}).make()
    try:
        lives = env
        while not isinstance(lives, AtariLives):
            lives = lives.env
        train = name == "train"
        assert (lives._episodic, lives._clip) == (train, train)
        assert lives._fire == env.unwrapped.get_action_meanings().index("FIRE")
    finally:
        env.close()


def test_noop_start_plays_1_to_noop_max_noops_after_each_reset():
    import gymnasium as gym

    from rlpipe.envs._atari import NoopStart

    class Counter(gym.Env):
        observation_space = gym.spaces.Discrete(100)
        action_space = gym.spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            self.steps = 0
            return 0, {}

        def step(self, action):
            assert action == 0  # only no-ops
            self.steps += 1
            return self.steps, 0.0, False, False, {}

    env = NoopStart(Counter(), noop_max=30)
    counts = {env.reset(seed=s)[0] for s in range(40)}
    assert min(counts) >= 1 and max(counts) <= 30 and len(counts) > 5
