import numpy as np
import pytest
import torch

from rlpipe.data import ReplayBuffer, to_torch


def test_flat_batch_keeps_dtypes():
    batch = {"obs": np.zeros((4, 3), np.float32), "action": np.arange(4), "terminated": np.zeros(4, bool),
             "frames": np.zeros((4, 2, 2), np.uint8)}
    out = to_torch(batch)
    assert out["obs"].dtype == torch.float32 and out["action"].dtype == torch.int64
    assert out["terminated"].dtype == torch.bool and out["frames"].dtype == torch.uint8
    assert out["obs"].shape == (4, 3) and out["obs"].device.type == "cpu"


def test_nested_observation_becomes_a_treetensor():
    import treetensor.torch as ttorch

    buf = ReplayBuffer(8, seed=0)
    buf.push({"obs": {"pos": np.ones((5, 2), np.float32), "img": {"a": np.zeros((5, 3, 3), np.uint8)}},
              "reward": np.ones(5, np.float32)})
    out = to_torch(buf.sample(6), device="cpu")
    assert isinstance(out["obs"], ttorch.Tensor)
    assert out["obs"].pos.shape == (6, 2) and out["obs"].img.a.dtype == torch.uint8
    assert (out["obs"] + 1).pos.sum().item() == 24.0  # tree arithmetic works
    assert isinstance(out["reward"], torch.Tensor) and out["index"].dtype == torch.int64


def test_non_numeric_values_are_refused():
    with pytest.raises(TypeError, match="'name'"):
        to_torch({"name": np.array(["a", "b"])})
