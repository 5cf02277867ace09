"""Encoders chosen from the observation space: Dict/Tuple parts, images, categorical parts,
per-key overrides, Text and action-mask keys left out; and a user's own network as the encoder."""
import logging

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlpipe.models import (MultiPartEncoder, ObservationShapeError, UnsupportedSpaceError,
                           build_encoder)
from rlpipe.models._parts import CategoricalPart, FlatPart, SmallConvTrunk
from rlpipe.models.conv import ConvTrunk

GRID = gym.spaces.Box(0, 255, (7, 7, 3), np.uint8)
DICT = gym.spaces.Dict({"vec": gym.spaces.Box(-1, 1, (5,)), "image": GRID,
                        "direction": gym.spaces.Discrete(4)})


def _batch(space, n=3):
    return {k: torch.as_tensor(np.stack([s.sample() for _ in range(n)])) for k, s in space.items()}


def test_dict_parts_in_sorted_key_order_and_feature_size():
    enc = build_encoder(DICT, (16,))
    assert isinstance(enc, MultiPartEncoder)
    assert enc.paths == ("direction", "image", "vec")
    direction, image, vec = enc.parts
    assert isinstance(direction, CategoricalPart) and direction.out_dim == 4
    assert isinstance(image, SmallConvTrunk) and image.out_dim == 64 * 4 * 4
    assert isinstance(vec, FlatPart) and vec.out_dim == 5
    assert enc.mlp.in_dim == 4 + 1024 + 5
    assert enc(_batch(DICT)).shape == (3, 16)


def test_atari_size_image_part_gets_the_nature_trunk():
    space = gym.spaces.Dict({"frame": gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)})
    enc = build_encoder(space, (8,))
    assert isinstance(enc.parts[0], ConvTrunk) and not enc.parts[0].channels_last


def test_override_reads_the_image_as_a_flat_vector():
    enc = build_encoder(DICT, (16,), encoders={"image": "mlp", "direction": "embed"})
    assert isinstance(enc.parts[1], FlatPart) and enc.parts[1].out_dim == 147
    assert enc.parts[0].out_dim == 8  # one 8-dim embedding
    x = _batch(DICT)
    x["image"] = torch.full((3, 7, 7, 3), 255, dtype=torch.uint8)
    assert enc.parts[1](x["image"]).max().item() == 1.0  # uint8 scaled to [0, 1]
    assert enc(x).shape == (3, 16)


def test_bad_override_key_or_kind_names_it():
    with pytest.raises(KeyError, match="model.encoders.imgae.*'direction', 'image', 'vec'"):
        build_encoder(DICT, (8,), encoders={"imgae": "mlp"})
    with pytest.raises(ValueError, match="model.encoders.image='cnn': unknown encoder kind"):
        build_encoder(DICT, (8,), encoders={"image": "cnn"})
    with pytest.raises(UnsupportedSpaceError, match="model.encoders.vec='onehot' needs"):
        build_encoder(DICT, (8,), encoders={"vec": "onehot"})


def test_nested_dict_tuple_and_multidiscrete():
    space = gym.spaces.Dict({
        "outer": gym.spaces.Dict({"inner": gym.spaces.MultiDiscrete([2, 3]),
                                  "flag": gym.spaces.MultiBinary(2)}),
        "pair": gym.spaces.Tuple((gym.spaces.Discrete(2, start=1), gym.spaces.Box(0, 1, (2,)))),
    })
    enc = build_encoder(space, (8,), encoders={"outer": {"inner": "embed"}})
    assert enc.paths == ("outer/flag", "outer/inner", "pair/0", "pair/1")
    x = {"outer": {"inner": torch.tensor([[0, 2], [1, 0]]), "flag": torch.tensor([[0, 1], [1, 1]])},
         "pair": {"0": torch.tensor([1, 2]), "1": torch.rand(2, 2)}}
    assert enc(x).shape == (2, 8)
    onehot = enc.parts[2](torch.tensor([1, 2]))  # Discrete(2, start=1)
    assert onehot.tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_discrete_observation_alone_is_one_hot():
    enc = build_encoder(gym.spaces.MultiDiscrete([3, 2]), ())
    assert enc(torch.tensor([[2, 1]])).tolist() == [[0.0, 0.0, 1.0, 0.0, 1.0]]


def test_text_part_left_out_with_one_logged_line(caplog):
    space = gym.spaces.Dict({"image": GRID, "mission": gym.spaces.Text(20)})
    with caplog.at_level(logging.INFO, logger="rlpipe"):
        enc = build_encoder(space, (8,))
    lines = [r.getMessage() for r in caplog.records if "mission" in r.getMessage()]
    assert len(lines) == 1 and "left out" in lines[0]
    assert enc.paths == ("image",)


def test_text_part_with_a_given_encoder_is_used():
    space = gym.spaces.Dict({"image": GRID, "mission": gym.spaces.Text(20)})
    enc = build_encoder(space, (8,), encoders={"mission": f"{__name__}:text_encoder"})
    assert enc.paths == ("image", "mission")


class _TextLength(torch.nn.Module):
    out_dim = 1

    def forward(self, x):
        return x.float().reshape(-1, 1)


def text_encoder(space):
    return _TextLength()


def test_action_mask_key_is_not_a_feature():
    space = gym.spaces.Dict({"observation": gym.spaces.Box(0, 1, (3,)),
                             "action_mask": gym.spaces.MultiBinary(4)})
    enc = build_encoder(space, (8,))
    assert enc.paths == ("observation",) and enc.mlp.in_dim == 3


def test_missing_part_and_wrong_shape_are_clear_errors():
    enc = build_encoder(DICT, (8,))
    x = _batch(DICT)
    del x["vec"]
    with pytest.raises(ObservationShapeError, match="no part 'vec'"):
        enc(x)
    x = _batch(DICT)
    x["vec"] = torch.zeros(3, 6)
    with pytest.raises(ObservationShapeError, match="vec expects a batch \\[B, 5\\]"):
        enc(x)


def test_small_plain_image_gets_the_small_trunk():
    enc = build_encoder(GRID, (8,))
    assert isinstance(enc.trunk, SmallConvTrunk) and enc.trunk.channels_last
    assert enc(torch.zeros(2, 7, 7, 3, dtype=torch.uint8)).shape == (2, 8)


def test_treetensor_batches_work():
    from rlpipe.data import to_torch
    batch = {k: np.stack([s.sample() for _ in range(4)]) for k, s in DICT.items()}
    obs = to_torch({"obs": batch})["obs"]
    assert build_encoder(DICT, (8,))(obs[torch.tensor([0, 2])]).shape == (2, 8)


def test_grid_kind_keeps_object_ids_unscaled():
    grid = build_encoder(GRID, (8,), encoders=None)
    raw = build_encoder(gym.spaces.Dict({"image": GRID}), (8,), encoders={"image": "grid"})
    assert grid.trunk.scale and not raw.parts[0].scale


def test_minigrid_mission_space_is_left_out(caplog):
    minigrid = pytest.importorskip("minigrid")
    env = gym.make("MiniGrid-DoorKey-5x5-v0")
    with caplog.at_level(logging.INFO, logger="rlpipe"):
        enc = build_encoder(env.observation_space, (8,))
    assert enc.paths == ("direction", "image")
    assert any("'mission'" in r.getMessage() and "left out" in r.getMessage()
               for r in caplog.records)
    assert minigrid


class _TupleNet(torch.nn.Module):
    """A user's whole-observation network for a Tuple(Dict(scalar), Box(3,)) space: it unpacks
    the tuple and reads the Dict's scalar by key."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 6)

    def forward(self, inputs):
        parts, vec = inputs
        return self.fc(torch.cat([parts["s"].unsqueeze(-1), vec], dim=1))


TUPLE = gym.spaces.Tuple((gym.spaces.Dict({"s": gym.spaces.Box(-1, 1, ())}),
                          gym.spaces.Box(0, 255, (3,), np.uint8)))


def test_given_encoder_gets_the_batch_nested_as_the_space_as_float():
    from rlpipe.models import ActorCritic

    net = _TupleNet()
    weight = net.fc.weight.clone()
    model = ActorCritic(TUPLE, gym.spaces.Discrete(2), hidden=(5,), share_encoder=True,
                        encoder=net)
    assert torch.equal(net.fc.weight, weight)  # its own initialisation is kept
    assert model.actor_encoder.in_dim == 6 and model.actor_encoder.out_dim == 5
    assert model.critic_encoder is None
    # a batch as the env manager gives it: a Tuple's parts keyed "0", "1"; uint8 leaves
    batch = {"0": {"s": torch.tensor([0.5, -0.5])},
             "1": torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=torch.uint8)}
    dist, value = model(batch)
    assert dist.logits.shape == (2, 2) and value.shape == (2,)
    copied = ActorCritic(TUPLE, gym.spaces.Discrete(2), hidden=(), encoder=net)
    assert copied.critic_encoder.module is not net and copied.actor_encoder.module is net


def test_given_encoder_that_does_not_fit_is_a_one_line_error():
    from rlpipe.models import ActorCritic

    with pytest.raises(ValueError, match=r"fails on a batch of one zero observation of Tuple"):
        ActorCritic(TUPLE, gym.spaces.Discrete(2), encoder=torch.nn.Linear(4, 6))
    flat = gym.spaces.Box(-1, 1, (4,))
    with pytest.raises(ValueError, match=r"must return features \[B, F\].*got \(1, 2, 3\)"):
        unflat = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Unflatten(1, (2, 3)))
        ActorCritic(flat, gym.spaces.Discrete(2), encoder=unflat)
    with pytest.raises(TypeError, match="a torch.nn.Module that maps"):
        ActorCritic(flat, gym.spaces.Discrete(2), encoder=lambda x: x)
    with pytest.raises(ValueError, match="not both"):
        ActorCritic(flat, gym.spaces.Discrete(2), encoder=torch.nn.Linear(4, 6),
                    encoders={"a": "mlp"})
