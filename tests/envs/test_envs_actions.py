"""Actions: checked before a native env steps, delivered unchanged to async workers."""

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AsyncVectorEnv

from rlpipe.envs import EnvManager
from rlpipe.envs._actions import ActionCheck
from tests.envs.env_fakes import ActionEchoEnv


BAD_ACTIONS = [
    (lambda n: np.full(n, 2), "values in \\[2, 2\\]"),
    (lambda n: np.r_[np.zeros(n - 1, np.int64), -1], "values in \\[-1, 0\\]"),
    (lambda n: np.zeros(n, np.float64), "dtype float64"),
    (lambda n: np.zeros(n + 1, np.int64), "shape \\("),
    (lambda n: np.zeros((n, 1), np.int64), "shape \\("),
]


@pytest.mark.parametrize("n_envs", [8, 64])  # the short-list and the NumPy-reduction checks
@pytest.mark.parametrize("bad, what", BAD_ACTIONS)
def test_native_rejects_a_bad_action_as_the_callers_mistake(n_envs, bad, what):
    with EnvManager("CartPole-v1", n_envs=n_envs, seed=0, mode="native") as m:
        m.reset()
        pattern = f"expected {n_envs} actions.*in \\[0, 1\\].*got .*{what}"
        with pytest.raises(ValueError, match=pattern):
            m.step(bad(n_envs))
        assert m.restarts == 0  # not taken for an env crash
        result = m.step(np.ones(n_envs, dtype=np.int64))  # and the env still steps
        assert result.valid.all()


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("bad, what", BAD_ACTIONS)
def test_sync_and_async_reject_a_bad_discrete_action_before_any_sub_env_steps(mode, bad, what):
    n, steps = 3, np.random.default_rng(0).integers(0, 2, size=(20, 3))
    with EnvManager("CartPole-v1", n_envs=n, seed=0, mode=mode) as m, \
            EnvManager("CartPole-v1", n_envs=n, seed=0, mode=mode) as reference:
        m.reset()
        reference.reset()
        for i, actions in enumerate(steps):
            if i == 5:
                with pytest.raises(ValueError, match=f"expected {n} actions.*got .*{what}"):
                    m.step(bad(n))
            got, want = m.step(actions), reference.step(actions)
            np.testing.assert_array_equal(got.obs, want.obs)  # no sub-env moved on the bad one
        assert m.restarts == 0


@pytest.mark.parametrize("n_envs", [8, 64])
def test_native_accepts_what_the_space_accepts(n_envs):
    with EnvManager("CartPole-v1", n_envs=n_envs, seed=0, mode="native") as m:
        m.reset()
        for actions in (np.ones(n_envs, np.int32), np.zeros(n_envs, np.bool_),
                        [1] * n_envs, np.ones(n_envs, np.uint8)):
            assert m.step(actions).valid.all()
        # the env's own space still checks any other array itself, and a stepped one again
        space = m.batch_action_space
        stepped = np.ones(n_envs, dtype=np.int64)
        m.step(stepped)
        stepped[0] = 5
        assert not space.contains(stepped)
        assert space.contains(np.ones(n_envs, np.int64))
        assert not space.contains(np.full(n_envs, 2))
        assert space.contains(space.sample())


def test_the_check_agrees_with_the_space_where_its_bitwise_shortcut_cannot_decide():
    space = spaces.MultiDiscrete([3] * 40)  # 3 is not a power of 2: an OR of 3 can still be valid
    reference = spaces.MultiDiscrete([3] * 40)
    check = ActionCheck(space, 40)
    rng = np.random.default_rng(0)
    for _ in range(200):
        actions = rng.integers(-1, 4, size=40) if rng.random() < 0.5 else rng.integers(0, 3, 40)
        if reference.contains(actions):
            assert check(actions) is actions
        else:
            with pytest.raises(ValueError):
                check(actions)
    assert check(np.r_[np.ones(20, np.int64), np.full(20, 2)]) is not None  # OR = 3, valid


@pytest.mark.parametrize("continuous", [False, True])
def test_async_workers_get_the_actions_a_bare_async_vector_env_would_give(continuous):
    n = 3
    actions = (np.array([[0.5, -0.5]] * n, np.float32) if continuous
               else np.array([2, 0, 1], np.int64))
    bare = AsyncVectorEnv([lambda: ActionEchoEnv(continuous) for _ in range(n)])
    try:
        bare.reset(seed=0)
        expected = bare.step(actions)[4]["got"].tolist()
    finally:
        bare.close()
    with EnvManager(lambda: ActionEchoEnv(continuous), n_envs=n, seed=0, mode="async") as m:
        m.reset()
        got = m.step(actions).infos["got"].tolist()
    assert got == expected
    assert got[0].startswith("ndarray:float32" if continuous else "int64:int64:2")
