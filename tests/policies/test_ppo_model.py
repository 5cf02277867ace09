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


def _grid_batch(rows: int = 5, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {"image": torch.as_tensor(rng.integers(0, 11, (rows, 7, 7, 3), dtype=np.uint8)),
            "direction": torch.as_tensor(rng.integers(0, 4, rows))}


def _through_modules(net: ActorCritic, obs: dict) -> tuple:
    """outputs(obs) computed through Module.__call__ of every layer (the reference)."""
    actor = net.actor_encoder.mlp(net.actor_encoder.features(obs))
    critic = net.critic_encoder.mlp(net.critic_encoder.features(obs))
    return net.action_head(actor), net.value_head(critic).squeeze(-1)


@pytest.mark.parametrize("encoders", [{"image": "mlp"}, {"image": "conv"}])
def test_outputs_follow_the_weights_wherever_they_come_from(encoders):
    """The acting path reads each Linear's weight and bias from its parameter dict at every
    call: its outputs equal those of the layers called as modules, to the bit, after the
    weights are changed in place, loaded, reassigned, or the network deep-copied."""
    torch.manual_seed(0)
    net = ActorCritic(GRID, gym.spaces.Discrete(7), hidden=(16, 16), encoders=encoders)
    obs = _grid_batch()

    def same(model: ActorCritic) -> tuple:
        logits, value = model.outputs(obs)
        ref_logits, ref_value = _through_modules(model, obs)
        assert torch.equal(logits, ref_logits) and torch.equal(value, ref_value)
        return logits, value

    before = same(net)
    with torch.no_grad():
        net.actor_encoder.mlp.net[0].weight.mul_(2.0)  # in place (a hard update does this)
    assert not torch.equal(same(net)[0], before[0])
    other = ActorCritic(GRID, gym.spaces.Discrete(7), hidden=(16, 16), encoders=encoders)
    net.load_state_dict(other.state_dict())
    assert torch.equal(same(net)[0], other.outputs(obs)[0])
    net.value_head.bias = torch.nn.Parameter(torch.full((1,), 3.0))  # a new Parameter object
    net.action_head = torch.nn.Linear(16, 7)  # a new head module
    assert torch.allclose(same(net)[1], other.outputs(obs)[1] - other.value_head.bias + 3.0)
    copy = __import__("copy").deepcopy(net)
    with torch.no_grad():
        copy.critic_encoder.mlp.net[2].bias.add_(1.0)  # the copy's own weights, not net's
    assert not torch.equal(same(copy)[1], same(net)[1])
    # a replaced MLP layer, or a whole new MLP, is the one that runs
    net.actor_encoder.mlp.net[0] = torch.nn.Linear(net.actor_encoder.mlp.net[0].in_features, 16)
    same(net)
    net.critic_encoder.mlp = copy.critic_encoder.mlp
    same(net)
    assert torch.equal(net.outputs(obs)[1], same(copy)[1])
    # a replaced part of a Dict encoder too
    class Doubled(torch.nn.Module):
        def __init__(self, part):
            super().__init__()
            self.part = part

        def forward(self, x):
            return 2.0 * self.part(x)

    encoder = net.actor_encoder
    before = encoder.features(obs)
    k = encoder.paths.index("direction")
    encoder.parts[k] = Doubled(encoder.parts[k])
    after = encoder.features(obs)
    cols = slice(0, 4) if k == 0 else slice(before.shape[1] - 4, None)  # its one-hot's columns
    assert torch.equal(after[:, cols], 2.0 * before[:, cols]) and after[:, cols].abs().sum() > 0
