"""Dict/Tuple observations (nested dicts of stacked arrays), MultiDiscrete actions, trees."""

import numpy as np
import pytest
import torch

from rlpipe.envs import EnvManager, obs_to_tree
from tests.envs.env_fakes import NestedObsEnv

ACTIONS = np.array([[2, 3], [1, 0]])


def nested(kind, length=4):
    return lambda: NestedObsEnv(kind=kind, length=length)


def leaf_shapes(obs, prefix=""):
    if isinstance(obs, np.ndarray):
        return {prefix: obs.shape}
    out = {}
    for k, v in obs.items():
        out.update(leaf_shapes(v, f"{prefix}/{k}"))
    return out


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind, top", [("dict", "vec"), ("tuple", "0")])
def test_nested_obs_are_dicts_of_stacked_arrays(kind, top, mode):
    inner = "inner" if kind == "dict" else "1"
    with EnvManager(nested(kind), n_envs=2, seed=0, mode=mode) as m:
        obs = m.reset()
        assert leaf_shapes(obs) == {
            f"/{top}": (2, 3), f"/{inner}/img": (2, 2, 2), f"/{inner}/pos": (2,)
        }
        results = [m.step(ACTIONS) for _ in range(4)]
    assert obs[inner]["img"].dtype == np.uint8
    np.testing.assert_array_equal(results[0].obs[top], [[1, 2, 3], [1, 1, 0]])
    np.testing.assert_array_equal(results[0].reward, [5, 1])
    last = results[3]  # truncated after 4 steps: final obs in next_obs, reset obs in obs
    assert last.truncated.all()
    np.testing.assert_array_equal(last.next_obs[top][:, 0], [4, 4])
    np.testing.assert_array_equal(last.next_obs[inner]["img"], np.full((2, 2, 2), 4))
    np.testing.assert_array_equal(last.next_obs[inner]["pos"], [4, 4])
    np.testing.assert_array_equal(last.obs[top][:, 0], [0, 0])
    np.testing.assert_array_equal(last.obs[inner]["pos"], [0, 0])
    # an earlier step's arrays are not overwritten by later steps
    np.testing.assert_array_equal(results[1].obs[inner]["pos"], [2, 2])


def test_multidiscrete_actions_reach_each_env():
    with EnvManager(nested("dict"), n_envs=2, seed=0, mode="sync") as m:
        assert m.action_space.nvec.tolist() == [3, 4]
        assert m.batch_action_space.sample().shape == (2, 2)
        m.reset()
        r = m.step(ACTIONS)
    np.testing.assert_array_equal(r.obs["vec"][:, 1:], ACTIONS)


def test_obs_to_tree_builds_one_tree_from_stacked_arrays():
    import treetensor.torch as ttorch

    with EnvManager(nested("dict"), n_envs=3, seed=0, mode="sync") as m:
        obs = m.reset()
    tree = obs_to_tree(obs)
    assert isinstance(tree, ttorch.Tensor)
    assert tree.vec.shape == (3, 3) and tree.inner.img.dtype == torch.uint8
    assert tree.inner.pos.shape == (3,)
    assert tree.vec.data_ptr() == torch.from_numpy(obs["vec"]).data_ptr()  # no copy
    plain = obs_to_tree(np.zeros((3, 4), dtype=np.float32))
    assert isinstance(plain, torch.Tensor) and plain.shape == (3, 4)
