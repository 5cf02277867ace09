"""A small env with a Dict observation (uint8 image + vector Box + Discrete part), shipped for
the Dict-observation tests, and a check of the env itself.

The reward depends on every part, so a model that reads only some of them learns less:
Discrete actions: reward 1 when the action equals (flag + image[0, 0, 0] > 127) mod 2;
Box actions: reward −(action − vec[0])². Episodes are truncated after 16 steps.
"""
import gymnasium as gym
import numpy as np

IMAGE = gym.spaces.Box(0, 255, (6, 6, 3), np.uint8)


class DictObsEnv(gym.Env):
    """A Dict-observation env; `continuous=True` gives a Box(-1, 1, (1,)) action space."""

    def __init__(self, continuous: bool = False) -> None:
        self.observation_space = gym.spaces.Dict({
            "image": IMAGE, "vec": gym.spaces.Box(-1, 1, (3,), np.float32),
            "flag": gym.spaces.Discrete(3)})
        self.continuous = continuous
        self.action_space = (gym.spaces.Box(-1, 1, (1,), np.float32) if continuous
                             else gym.spaces.Discrete(2))
        self._obs = None
        self._t = 0

    def _draw(self):
        bright = self.np_random.integers(2)
        image = self.np_random.integers(0, 100, IMAGE.shape).astype(np.uint8)
        image[0, 0, 0] = 200 if bright else 50
        return {"image": image, "vec": self.np_random.uniform(-1, 1, 3).astype(np.float32),
                "flag": int(self.np_random.integers(3))}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        self._obs = self._draw()
        return self._obs, {}

    def step(self, action):
        o = self._obs
        if self.continuous:
            reward = -float((np.asarray(action).reshape(-1)[0] - o["vec"][0]) ** 2)
        else:
            reward = float(int(action) == (o["flag"] + int(o["image"][0, 0, 0] > 127)) % 2)
        self._t += 1
        self._obs = self._draw()
        return self._obs, reward, False, self._t >= 16, {}


def make_discrete() -> gym.Env:
    return DictObsEnv(continuous=False)


def make_continuous() -> gym.Env:
    return DictObsEnv(continuous=True)


def test_env_matches_its_space():
    env = make_discrete()
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    for _ in range(16):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs) and reward in (0.0, 1.0)
    assert truncated and not terminated
