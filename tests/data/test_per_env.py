"""`PerEnvOutput`: the batched policy output as seed 003's Dict[int, Dict]."""
import numpy as np
import pytest

from rlpipe.data import PerEnvOutput, batch_of


def test_per_env_view_slices_rows_and_keeps_the_batch():
    batch = {"action": np.array([1, 0, 1]), "logp": np.array([-0.1, -0.2, -0.3]),
             "extra": {"h": np.arange(6).reshape(3, 2)}}
    out = PerEnvOutput(batch, 3)
    assert list(out) == [0, 1, 2] and len(out) == 3 and 1 in out and 3 not in out
    assert out[1]["action"] == 0 and out[1]["logp"] == -0.2
    np.testing.assert_array_equal(out[2]["extra"]["h"], [4, 5])
    assert [v["action"] for v in out.values()] == [1, 0, 1]
    assert out.batch is batch and batch_of(out) is batch
    with pytest.raises(KeyError, match="inference_output.batch"):
        out["action"]
    with pytest.raises(KeyError, match="no env 5"):
        out[5]


def test_batch_of_stacks_a_hand_written_mapping_and_passes_batches_through():
    hand = {1: {"action": 4, "v": {"x": 1.0}}, 0: {"action": 3, "v": {"x": 2.0}}}
    got = batch_of(hand)
    np.testing.assert_array_equal(got["action"], [3, 4])
    np.testing.assert_array_equal(got["v"]["x"], [2.0, 1.0])
    plain = {"action": np.zeros(2)}
    assert batch_of(plain) is plain and batch_of(None) == {}
