"""Native mode on a NEXT_STEP vector env other than CartPole: the generic ``reset_mask`` path."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv

from rlpipe.envs import EnvFailureError, EnvManager


class CountdownVec(VectorEnv):
    """Row i counts 0, 1, 2, ... and terminates at 3 + i; NEXT_STEP autoreset (a pseudo-step
    with reward 0 follows every end). ``honour_mask=False`` resets every row on a masked reset."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs=3, honour_mask=True):
        self.num_envs = num_envs
        self.honour_mask = honour_mask
        self.single_observation_space = spaces.Box(0, 100, (1,), np.float32)
        self.single_action_space = spaces.Discrete(2)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, num_envs)
        self.limit = 3 + np.arange(num_envs)
        self.count = np.zeros(num_envs, dtype=np.int64)
        self.prev_done = np.zeros(num_envs, dtype=bool)

    def reset(self, *, seed=None, options=None):
        mask = (options or {}).get("reset_mask")
        if mask is None or not self.honour_mask:
            mask = np.ones(self.num_envs, dtype=bool)
        self.count[mask] = 0
        self.prev_done[mask] = False
        return self.count[:, None].astype(np.float32), {}

    def step(self, actions):
        pseudo = self.prev_done.copy()
        self.count += 1
        self.count[pseudo] = 0
        terminated = (self.count >= self.limit) & ~pseudo
        reward = np.where(pseudo, 0.0, 1.0).astype(np.float32)
        self.prev_done = terminated.copy()
        return (self.count[:, None].astype(np.float32), reward, terminated,
                np.zeros(self.num_envs, dtype=bool), {})


@pytest.fixture(scope="module", autouse=True)
def registered():
    gym.register("rlpipe-test/Countdown-v0", entry_point=None,
                 vector_entry_point=lambda num_envs, **kw: CountdownVec(num_envs, **kw))
    yield
    del gym.registry["rlpipe-test/Countdown-v0"]


def test_masked_reset_gives_real_transitions_only():
    with EnvManager("rlpipe-test/Countdown-v0", n_envs=3, mode="native") as m:
        m.reset()
        ends = []
        for t in range(1, 13):
            r = m.step(np.zeros(3, dtype=np.int64))
            assert r.reward.tolist() == [1.0, 1.0, 1.0]  # never a pseudo-step
            for e in r.episodes:
                ends.append((t, e["env_id"], e["length"]))
                assert r.next_obs[e["env_id"], 0] == 3 + e["env_id"]  # true final obs
                assert r.obs[e["env_id"], 0] == 0  # the new episode's first obs
    assert ends == [(3, 0, 3), (4, 1, 4), (5, 2, 5), (6, 0, 3), (8, 1, 4), (9, 0, 3),
                    (10, 2, 5), (12, 0, 3), (12, 1, 4)]


def test_an_env_that_ignores_reset_mask_is_refused_with_a_clear_error():
    with EnvManager("rlpipe-test/Countdown-v0", n_envs=3, mode="native",
                    env_kwargs={"honour_mask": False}) as m:
        m.reset()
        with pytest.raises(EnvFailureError, match="ignored reset.*reset_mask.*mode='sync'"):
            for _ in range(4):
                m.step(np.zeros(3, dtype=np.int64))
