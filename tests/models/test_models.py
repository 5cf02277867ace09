import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

import rlpipe.models as models
from rlpipe.models import (MLP, ConvTrunk, Encoder, ObservationShapeError, QNetwork,
                           UnsupportedSpaceError, build_encoder)

VEC = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
IMG = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)


def test_all_lists_public_names():
    assert sorted(models.__all__) == [
        "ActorCritic", "ContinuousQAC", "ConvTrunk", "DeterministicActor", "Encoder", "GaussianActor",
        "GivenEncoder", "MLP",
        "MultiAgentActorCritic", "MultiPartEncoder", "ObservationShapeError", "QNetwork",
        "RecurrentCore", "RecurrentQNetwork", "RunningNorm",
        "SquashedGaussianActor", "TwinQCritic", "UnsupportedSpaceError", "ValueNetwork",
        "batch_rows", "build_encoder", "obs_as_tensor"]
    for name in models.__all__:
        assert hasattr(models, name)


def test_mlp_layers_and_shapes():
    mlp = MLP(3, 2, hidden=(5, 7), activation=nn.Tanh)
    kinds = [type(m) for m in mlp.net]
    assert kinds == [nn.Linear, nn.Tanh, nn.Linear, nn.Tanh, nn.Linear]
    assert mlp(torch.zeros(6, 3)).shape == (6, 2)
    assert mlp(torch.zeros(2, 6, 3)).shape == (2, 6, 2)
    assert type(MLP(3, 2, (4,), activate_output=True).net[-1]) is nn.ReLU
    assert len(MLP(3, 2, ()).net) == 1


def test_mlp_rejects_wrong_input_and_bad_sizes():
    with pytest.raises(ObservationShapeError, match=r"\[\.\.\., 3\].*\(6, 4\)"):
        MLP(3, 2)(torch.zeros(6, 4))
    with pytest.raises(ValueError, match="positive"):
        MLP(3, 0)


def test_conv_trunk_nature_sizes_scaling_and_layouts():
    trunk = ConvTrunk(4)
    assert trunk.out_dim == 3136
    frames = torch.randint(0, 256, (2, 4, 84, 84), dtype=torch.uint8)
    out = trunk(frames)
    assert out.shape == (2, 3136)
    # uint8 is scaled by 1/255: same as feeding the scaled floats
    assert torch.allclose(out, trunk(frames.float() / 255.0), atol=1e-6)
    last = ConvTrunk(1, channels_last=True)
    assert last(torch.zeros(3, 84, 84, 1, dtype=torch.uint8)).shape == (3, 3136)
    assert ConvTrunk(3, 64, 64).out_dim == 64 * 4 * 4
    with pytest.raises(ObservationShapeError, match=r"\[B, C, H, W\] = \[B, 4, 84, 84\]"):
        trunk(torch.zeros(2, 84, 84, 4))
    with pytest.raises(ValueError, match="at least 36"):
        ConvTrunk(1, 20, 20)


def test_build_encoder_vectors_and_images():
    enc = build_encoder(VEC, (32, 16))
    assert isinstance(enc, Encoder) and enc.trunk is None and enc.out_dim == 16
    assert enc(torch.zeros(5, 4, dtype=torch.float64)).dtype == torch.float32
    enc = build_encoder(IMG, (512,))
    assert isinstance(enc.trunk, ConvTrunk) and enc.out_dim == 512
    assert enc(torch.zeros(2, 4, 84, 84, dtype=torch.uint8)).shape == (2, 512)
    hwc = gym.spaces.Box(0, 255, (84, 84, 3), np.uint8)
    enc = build_encoder(hwc, ())
    assert enc.trunk.channels_last and enc.out_dim == 3136


@pytest.mark.parametrize("space", [
    gym.spaces.Text(5),
    gym.spaces.Box(0, 1, (84, 84)),
    gym.spaces.Box(0, 1, (1, 2, 3, 4)),
])
def test_build_encoder_unsupported_space(space):
    with pytest.raises(UnsupportedSpaceError) as info:
        build_encoder(space, (8,))
    msg = str(info.value)
    assert repr(space) in msg and "Supported: Box (1-D vectors" in msg


def test_encoder_shape_mismatch_names_space():
    enc = build_encoder(VEC, (8,))
    for bad in (torch.zeros(8, 5), torch.zeros(4)):
        with pytest.raises(ObservationShapeError, match=r"Box\(-inf, inf, \(4,\), float32\).*\[B, 4\]"):
            enc(bad)
    img = build_encoder(IMG, (8,))
    with pytest.raises(ObservationShapeError, match=r"\[B, 4, 84, 84\]"):
        img(torch.zeros(4, 84, 84, dtype=torch.uint8))


def test_qnetwork_plain_and_dueling():
    torch.manual_seed(0)
    q = QNetwork(VEC, 3, hidden=(16,))
    assert q(torch.zeros(7, 4)).shape == (7, 3)
    d = QNetwork(VEC, 3, hidden=(16,), dueling=True)
    obs = torch.randn(5, 4)
    feats = d.encoder(obs)
    adv = d.head(feats)
    expected = d.value_head(feats) + adv - adv.mean(-1, keepdim=True)
    assert torch.allclose(d(obs), expected)
    # dueling: mean over actions of Q equals V
    assert torch.allclose(d(obs).mean(-1, keepdim=True), d.value_head(feats), atol=1e-6)
    with pytest.raises(ObservationShapeError):
        q(torch.zeros(7, 6))
    assert QNetwork(IMG, 6, hidden=(512,))(torch.zeros(1, 4, 84, 84, dtype=torch.uint8)).shape == (1, 6)


def test_squashed_gaussian_log_prob_of_given_actions_matches_sample():
    actor = models.SquashedGaussianActor(gym.spaces.Box(-1, 1, (3,)), 2, (16,))
    obs = torch.randn(64, 3)
    action, logp = actor.sample(obs, torch.Generator().manual_seed(0))
    inside = action.abs().max(1).values < 0.999  # away from the atanh clip
    assert torch.allclose(actor.log_prob(obs, action)[inside], logp[inside], atol=1e-3)
    edge = actor.log_prob(obs, torch.ones(64, 2))  # a data set's clipped actions stay finite
    assert torch.isfinite(edge).all()


def test_squashed_gaussian_draws_n_actions_per_state_from_one_pass():
    actor = models.SquashedGaussianActor(gym.spaces.Box(-1, 1, (3,)), 2, (16,))
    obs, n = torch.randn(8, 3), 5
    noise = torch.randn(8 * n, 2, generator=torch.Generator().manual_seed(1))
    action, logp = actor.sample(obs, noise=noise, repeats=n)
    expected, expected_logp = actor.sample(obs.repeat_interleave(n, 0), noise=noise)
    assert action.shape == (8 * n, 2) and logp.shape == (8 * n,)
    torch.testing.assert_close(action, expected)
    torch.testing.assert_close(logp, expected_logp)
    calls = []
    actor.encoder.register_forward_hook(lambda module, args, out: calls.append(args[0].shape[0]))
    actor.sample(obs, noise=noise, repeats=n)
    assert calls == [8]  # the network saw each state once


def test_obs_as_tensor_shares_cpu_arrays_and_keeps_nesting():
    """Arrays for the CPU become tensors over the same memory (no copy per env step), nested
    as given; a read-only array still converts (torch warns once per process), a tensor is
    moved."""
    import warnings

    from rlpipe.models import obs_as_tensor

    image = np.zeros((2, 3), np.uint8)
    out = obs_as_tensor({"image": image, "inner": {"k": np.array([1, 2])}}, torch.device("cpu"))
    image[0, 0] = 7
    assert out["image"][0, 0].item() == 7 and out["image"].dtype == torch.uint8
    assert out["inner"]["k"].tolist() == [1, 2]
    frozen = np.arange(3.0)
    frozen.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert obs_as_tensor(frozen, torch.device("cpu")).tolist() == [0.0, 1.0, 2.0]
    assert obs_as_tensor(torch.ones(2), torch.device("cpu")).tolist() == [1.0, 1.0]
