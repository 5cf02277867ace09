"""BatchStacker (the sync loop's stacking of Dict/Tuple observations) gives what gymnasium's
create_empty_array + concatenate give, re-keyed to our layout, and survives pickling (env states);
a Discrete observation part out of its range is a clear error."""
import pickle

import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.vector.utils import concatenate, create_empty_array

from rlpipe.envs._obs import BatchStacker, to_batch
from rlpipe.models import ObservationShapeError
from rlpipe.models._parts import CategoricalPart

SPACE = spaces.Dict({
    "image": spaces.Box(0, 255, (3, 4, 2), np.uint8),
    "parts": spaces.Tuple((spaces.Discrete(3, start=1), spaces.MultiBinary(2),
                           spaces.Dict({"md": spaces.MultiDiscrete([2, 5])}))),
    "vec": spaces.Box(-1, 1, (4,), np.float32),
})


def assert_same(a, b):
    if isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            assert_same(a[key], b[key])
    else:
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def test_stacks_like_gymnasium_and_survives_pickling():
    SPACE.seed(0)
    items = [SPACE.sample() for _ in range(5)]
    expected = to_batch(concatenate(SPACE, items, create_empty_array(SPACE, n=5)))
    stacker = pickle.loads(pickle.dumps(BatchStacker(SPACE, 5)))
    got = stacker(items)
    assert_same(expected, got)
    assert got["image"] is not stacker(items)["image"]  # a fresh array per call: rows are kept


def test_discrete_part_out_of_range_names_the_part():
    part = CategoricalPart(spaces.Discrete(3, start=1), "onehot", "parts/0")
    np.testing.assert_array_equal(part(torch.tensor([1, 3])), [[1, 0, 0], [0, 0, 1]])
    with pytest.raises(ObservationShapeError, match=r"parts/0 takes values in \[1, 4\)"):
        part(torch.tensor([4]))


def test_parts_take_the_space_dtype_and_refuse_what_np_stack_refused():
    """An env's part of another dtype of the same kind is cast to the space's (float64 into a
    float32 Box, Python ints into a Discrete's int64); a float into an integer part, or parts
    whose shape is not the space's, raise, naming the shapes."""
    space = spaces.Dict({"vec": spaces.Box(-1, 1, (2,), np.float32), "k": spaces.Discrete(3)})
    stacker = BatchStacker(space, 2)
    got = stacker([{"vec": np.array([0.5, 1.0]), "k": 2}, {"vec": np.zeros(2), "k": 0}])
    assert got["vec"].dtype == np.float32 and got["k"].dtype == np.int64
    np.testing.assert_array_equal(got["vec"], [[0.5, 1.0], [0.0, 0.0]])
    np.testing.assert_array_equal(got["k"], [2, 0])
    with pytest.raises(TypeError, match="same_kind"):
        stacker([{"vec": np.zeros(2), "k": 1.5}, {"vec": np.zeros(2), "k": 0}])
    with pytest.raises(ValueError, match=r"shape \(2,\).*\[\(2,\), \(3,\)\]"):
        stacker([{"vec": np.zeros(3), "k": 1}, {"vec": np.zeros(2), "k": 0}])
    with pytest.raises(ValueError, match=r"shape \(2,\).*\[\(3,\)\]"):
        stacker([{"vec": np.zeros(3), "k": 1}, {"vec": np.zeros(3), "k": 0}])
