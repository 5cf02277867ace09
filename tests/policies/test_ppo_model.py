"""ActorCritic and RunningNorm, the networks under PPOPolicy."""
import gymnasium as gym
import numpy as np
import pytest
import torch

from rlpipe.models import ActorCritic, RunningNorm, UnsupportedSpaceError

VEC3 = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
IMG = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)


def test_discrete_head_gives_a_categorical_and_a_value():
    net = ActorCritic(VEC3, gym.spaces.Discrete(4), hidden=(16,))
    dist, value = net(torch.zeros(5, 3))
    assert dist.logits.shape == (5, 4) and value.shape == (5,)
    assert dist.log_prob(torch.tensor([0, 1, 2, 3, 0])).shape == (5,)
    torch.testing.assert_close(net.value(torch.zeros(5, 3)), value)


def test_gaussian_head_has_a_state_independent_log_std():
    net = ActorCritic(VEC3, gym.spaces.Box(-1, 1, (2,), np.float32), init_log_std=-0.5)
    dist = net.dist(torch.randn(7, 3))
    assert dist.base_dist.loc.shape == (7, 2)
    torch.testing.assert_close(dist.base_dist.scale, torch.full((7, 2), float(np.exp(-0.5))))
    assert dist.log_prob(torch.zeros(7, 2)).shape == (7,)  # summed over action dims
    assert dist.entropy().shape == (7,)
    assert net.log_std.requires_grad


def test_initial_policy_is_near_uniform():
    net = ActorCritic(VEC3, gym.spaces.Discrete(3))  # action head scaled by 0.01
    probs = net.dist(torch.randn(64, 3) * 3).probs
    assert (probs - 1 / 3).abs().max() < 0.05


def test_shared_encoder_for_images():
    net = ActorCritic(IMG, gym.spaces.Discrete(6), hidden=(32,), share_encoder=True)
    assert net.critic_encoder is None
    dist, value = net(torch.zeros(2, 4, 84, 84, dtype=torch.uint8))
    assert dist.logits.shape == (2, 6) and value.shape == (2,)
    separate = ActorCritic(IMG, gym.spaces.Discrete(6), hidden=(32,))
    n_params = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert n_params(separate) > 1.8 * n_params(net)


def test_unsupported_spaces():
    with pytest.raises(UnsupportedSpaceError, match="MultiBinary and 1-D Box"):
        ActorCritic(VEC3, gym.spaces.Tuple((gym.spaces.Discrete(2),)))
    with pytest.raises(UnsupportedSpaceError, match="obs_norm"):
        ActorCritic(IMG, gym.spaces.Discrete(2), obs_norm=True)


def test_running_norm_matches_numpy_over_several_updates():
    rng = np.random.default_rng(0)
    data = rng.normal(loc=[1.0, -3.0], scale=[2.0, 0.5], size=(300, 2))
    norm = RunningNorm((2,))
    for chunk in np.split(data, [10, 110, 111]):
        norm.update(torch.as_tensor(chunk))
    np.testing.assert_allclose(norm.mean.numpy(), data.mean(0), rtol=1e-6)
    np.testing.assert_allclose(norm.var.numpy(), data.var(0), rtol=1e-5)
    out = norm(torch.as_tensor(data, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(out.mean(0), 0.0, atol=1e-5)
    np.testing.assert_allclose(out.std(0), 1.0, rtol=1e-4)
    assert norm(torch.tensor([[1e6, 0.0]])).max() == norm.clip


def test_obs_norm_is_part_of_the_state_dict():
    net = ActorCritic(VEC3, gym.spaces.Discrete(2), obs_norm=True)
    net.obs_norm.update(torch.randn(50, 3) + 4)
    other = ActorCritic(VEC3, gym.spaces.Discrete(2), obs_norm=True)
    other.load_state_dict(net.state_dict())
    x = torch.randn(4, 3)
    torch.testing.assert_close(other.value(x), net.value(x))


GRID = gym.spaces.Dict({"image": gym.spaces.Box(0, 10, (7, 7, 3), np.uint8),
                        "direction": gym.spaces.Discrete(4)})


@pytest.mark.parametrize("encoders, shared", [({"image": "mlp"}, True), ({"image": "conv"}, False),
                                              ({"direction": "embed"}, False)])
def test_actor_and_critic_read_features_computed_once_only_from_fixed_parts(encoders, shared):
    """Separate actor and critic encoders whose parts hold no weights (a grid read flat, a
    one-hot) share one computation of their input; the outputs are those of each encoder run
    on its own, to the bit. A conv trunk or embeddings are trained per encoder: not shared."""
    net = ActorCritic(GRID, gym.spaces.Discrete(7), hidden=(16, 16), encoders=encoders)
    assert net.shared_features is shared
    rng = np.random.default_rng(0)
    obs = {"image": torch.as_tensor(rng.integers(0, 11, (5, 7, 7, 3), dtype=np.uint8)),
           "direction": torch.as_tensor(rng.integers(0, 4, 5))}
    logits, value = net.outputs(obs)
    assert torch.equal(logits, net.action_head(net.actor_encoder(obs)))
    assert torch.equal(value, net.value_head(net.critic_encoder(obs)).squeeze(-1))
    assert not torch.equal(net.actor_encoder(obs), net.critic_encoder(obs))  # own MLPs
