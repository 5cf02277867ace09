"""Action masks from the env manager: the three sources, next masks at episode ends, the
all-false error, and the masked grid env."""
import gymnasium as gym
import numpy as np
import pytest
from easydict import EasyDict

from rlpipe.contexts import OnlineRLContext
from rlpipe.envs import EnvManager
from rlpipe.middleware import StepCollector
from tests.middleware.fakes import FakeCollectPolicy

GRID = "rlpipe/MaskedGrid-v0"
UP, DOWN, LEFT, RIGHT = range(4)


def test_random_masked_warmup_never_takes_an_invalid_action_in_10k_steps():
    env = EnvManager(GRID, n_envs=4, seed=0)
    cfg = EasyDict(policy=dict(collect=dict(n_sample=10_000, random_collect_size=10**9)))
    collector = StepCollector(cfg, FakeCollectPolicy(), env)
    ctx = OnlineRLContext()
    gen = collector(ctx)
    next(gen)
    rewards = np.stack([s["reward"] for s in ctx.trajectories])
    taken = np.stack([s["action"] for s in ctx.trajectories])
    masks = np.stack([s["action_mask"] for s in ctx.trajectories])
    assert ctx.env_step >= 10_000
    assert (rewards >= 0).all()  # an invalid move would give −1
    assert np.take_along_axis(masks, taken[..., None], axis=2).all()
    assert ctx.env_episode > 0 and len(set(taken.ravel().tolist())) == 4
    env.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_info_mask_after_reset_and_step_and_the_final_observations_mask_at_truncation(mode):
    env = EnvManager(GRID, n_envs=1, seed=0, mode=mode, env_kwargs=dict(max_episode_steps=2))
    env.reset()
    np.testing.assert_array_equal(env.action_mask, [[False, True, False, True]])
    first = env.step(np.array([DOWN]))  # (1, 0): up and right are open
    np.testing.assert_array_equal(first.action_mask, [[True, False, False, True]])
    np.testing.assert_array_equal(first.next_action_mask, first.action_mask)
    last = env.step(np.array([RIGHT]))  # (1, 1), truncated by the time limit
    assert last.truncated[0] and not last.terminated[0]
    np.testing.assert_array_equal(last.next_action_mask, [[True, True, True, False]])  # final
    np.testing.assert_array_equal(last.action_mask, [[False, True, False, True]])  # new episode
    np.testing.assert_array_equal(env.action_mask, last.action_mask)
    env.close()


def test_env_without_a_mask_gives_none_and_masks_can_be_switched_off():
    with EnvManager("CartPole-v1", n_envs=2, seed=0) as env:
        env.reset()
        assert env.action_mask is None and env.step(np.array([0, 1])).action_mask is None
    with EnvManager(GRID, n_envs=2, seed=0, action_masks=False) as env:
        env.reset()
        assert env.action_mask is None
        assert env.step(np.array([DOWN, DOWN])).next_action_mask is None


def only_left_if_even(obs, infos):
    """Batched user mask function: action 0 only, for every env."""
    mask = np.zeros((len(obs), 2), dtype=bool)
    mask[:, 0] = True
    return mask


def test_user_mask_function_as_callable_and_as_module_string():
    for fn in (only_left_if_even, f"{__name__}:only_left_if_even"):
        with EnvManager("CartPole-v1", n_envs=3, seed=0, action_mask_fn=fn) as env:
            env.reset()
            np.testing.assert_array_equal(env.action_mask, [[True, False]] * 3)
            assert env.step(np.zeros(3, dtype=np.int64)).action_mask.shape == (3, 2)
    with pytest.raises(ValueError, match="module:function"):
        EnvManager("CartPole-v1", action_mask_fn="no_colon_here")


class DictMaskEnv(gym.Env):
    """PettingZoo's convention: the mask is the observation key "action_mask"."""

    def __init__(self, empty_at=None):
        self.observation_space = gym.spaces.Dict({
            "obs": gym.spaces.Box(0, 10, (1,), np.float32),
            "action_mask": gym.spaces.MultiBinary(3)})
        self.action_space = gym.spaces.Discrete(3)
        self.empty_at = empty_at
        self.t = 0

    def _obs(self):
        mask = np.array([True, self.t % 2 == 0, False], dtype=np.int8)
        if self.empty_at is not None and self.t >= self.empty_at:
            mask[:] = 0
        return {"obs": np.array([self.t], np.float32), "action_mask": mask}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), 0.0, False, self.t >= 5, {}


def test_mask_from_an_observation_key():
    with EnvManager(DictMaskEnv, n_envs=2, seed=0) as env:
        env.reset()
        np.testing.assert_array_equal(env.action_mask, [[True, True, False]] * 2)
        result = env.step(np.array([0, 0]))
        np.testing.assert_array_equal(result.action_mask, [[True, False, False]] * 2)


def test_an_all_false_mask_is_one_error_naming_env_and_step():
    with EnvManager(lambda: DictMaskEnv(empty_at=2), n_envs=2, seed=0) as env:
        env.reset()
        env.step(np.array([0, 0]))
        with pytest.raises(ValueError, match=r"sub-env 0, manager step 2: the action mask allows "
                                             r"no action"):
            env.step(np.array([0, 0]))


def test_a_policy_without_mask_support_is_refused_with_the_fix():
    env = EnvManager(GRID, n_envs=2, seed=0)
    cfg = EasyDict(policy=dict(collect=dict(n_sample=4, random_collect_size=0)))
    collector = StepCollector(cfg, FakeCollectPolicy(), env)
    with pytest.raises(ValueError, match="does not take them.*action_masks=False"):
        next(collector(OnlineRLContext()))
    env.close()


class CrashingGrid(gym.Env):
    """The masked grid, raising in its 3rd step (once per process)."""

    crashed = False

    def __init__(self):
        from rlpipe.envs._maskedgrid import MaskedGridEnv
        self.inner = MaskedGridEnv()
        self.observation_space, self.action_space = (self.inner.observation_space,
                                                     self.inner.action_space)
        self.steps = 0

    def reset(self, *, seed=None, options=None):
        return self.inner.reset(seed=seed)

    def step(self, action):
        self.steps += 1
        if self.steps == 3 and not CrashingGrid.crashed:
            CrashingGrid.crashed = True
            raise RuntimeError("boom")
        return self.inner.step(action)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_masks_go_on_after_an_env_is_restarted(mode, caplog):
    CrashingGrid.crashed = False
    with EnvManager(CrashingGrid, n_envs=2, seed=0, mode=mode) as env:
        env.reset()
        moves = [np.array([DOWN, DOWN]), np.array([UP, UP])] * 3
        results = [env.step(m) for m in moves]
    assert env.restarts >= 1
    assert not all(r.valid.all() for r in results)
    for result in results:  # every step still has its masks, and they are the grid's
        assert result.action_mask.shape == (2, 4) and result.action_mask.any(axis=1).all()
