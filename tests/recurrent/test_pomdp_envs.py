"""The partially observed envs: velocities removed, and the memory task RememberFirst."""
import gymnasium as gym
import numpy as np
import pytest

from rlpipe.envs import EnvManager, MaskObservation


@pytest.mark.parametrize("gym_id, full_id, keep, steps", [
    ("rlpipe/CartPoleNoVel-v1", "CartPole-v1", [0, 2], 500),
    ("rlpipe/PendulumNoVel-v1", "Pendulum-v1", [0, 1], 200),
])
def test_novel_envs_show_the_positions_of_the_full_env(gym_id, full_id, keep, steps):
    masked, full = gym.make(gym_id), gym.make(full_id)
    assert masked.spec.max_episode_steps == full.spec.max_episode_steps == steps
    assert masked.observation_space.shape == (len(keep),)
    np.testing.assert_array_equal(masked.observation_space.low, full.observation_space.low[keep])
    obs, _ = masked.reset(seed=3)
    want, _ = full.reset(seed=3)
    np.testing.assert_array_equal(obs, want[keep])
    action = full.action_space.sample()
    np.testing.assert_array_equal(masked.step(action)[0], full.step(action)[0][keep])


def test_mask_observation_refuses_what_it_cannot_keep():
    env = gym.make("CartPole-v1")
    with pytest.raises(ValueError, match=r"distinct indices in \[0, 4\).*out of range: \[4\]"):
        MaskObservation(env, keep=[0, 4])
    with pytest.raises(ValueError, match="distinct"):
        MaskObservation(env, keep=[1, 1])
    with pytest.raises(TypeError, match="flat Box"):
        MaskObservation(gym.make("FrozenLake-v1"), keep=[0])


def test_remember_first_rewards_naming_the_first_cue_at_the_last_step():
    env = gym.make("rlpipe/RememberFirst-v0")
    cues = set()
    for seed in range(10):
        obs, info = env.reset(seed=seed)
        cue = float(obs[0])
        cues.add(cue)
        right = 1 if cue > 0 else 0
        rewards, ends = [], []
        for t in range(4):
            obs, reward, terminated, truncated, _ = env.step(right if t == 3 else 1 - right)
            assert obs[0] == 0.0 and not truncated
            rewards.append(reward)
            ends.append(terminated)
        assert rewards == [0, 0, 0, 1] and ends == [False, False, False, True]
        env.reset(seed=seed)
        assert [env.step(1 - right)[1] for _ in range(4)][-1] == 0.0
    assert cues == {-1.0, 1.0}
    assert EnvManager("rlpipe/RememberFirst-v0", n_envs=2, seed=0).mode == "sync"
