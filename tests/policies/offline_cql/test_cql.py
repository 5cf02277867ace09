"""Continuous CQL(H) on SAC: the importance-sampled penalty against a hand-computed value (linear
critics, sampled actions injected), the Lagrange multiplier's direction, the sampled actions,
the state round trip."""
import copy
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlpipe.data import to_torch
from rlpipe.policies import CQLPolicy, get_policy
from rlpipe.policies.cql import importance_logsumexp
from tests.policies.pinned_update import assert_same_tensors

OBS1 = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
ACT1 = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)  # unit actions are env actions / 2
CRITICS = [([1.0, 2.0], 0.5), ([-1.0, 1.0], 0.0)]  # Q_i(s, a) = w · [s, a] + b, a in [-1, 1]


def linear_cql(learn=None, seed=0):
    policy = CQLPolicy({"seed": seed, "model": {"actor_hidden": (8,), "critic_hidden": ()},
                        "learn": {"cql_alpha": 3.0, "cql_n_actions": 1, **(learn or {})}},
                       OBS1, ACT1)
    with torch.no_grad():
        for net, (w, b) in zip(policy.critic.q_nets, CRITICS):
            (layer,) = net.net  # hidden=(): one linear layer over [obs, action]
            layer.weight.copy_(torch.tensor([w]))
            layer.bias.fill_(b)
    return policy


DATA = {"obs": np.array([[0.5], [-1.0]], np.float32),
        "action": np.array([[1.0], [-2.0]], np.float32),  # unit: 0.5, -1
        "reward": np.zeros(2, np.float32), "next_obs": np.array([[0.0], [0.3]], np.float32),
        "terminated": np.zeros(2, bool), "truncated": np.zeros(2, bool)}
# the 3n = 3 importance samples per state (uniform, π(s), π(s')) and their log-densities
SAMPLED = np.array([[[-1.0], [0.0], [0.5]], [[1.0], [-0.5], [0.2]]], np.float32)
LOG_DENSITY = np.array([[math.log(0.5), -0.3, -1.2], [math.log(0.5), 0.1, -0.7]], np.float32)


def hand_gaps(temperature=1.0):
    gaps = []
    for (w_s, w_a), b in CRITICS:
        rows = []
        for i, s in enumerate(DATA["obs"][:, 0]):
            q = [w_s * s + w_a * a + b for a in SAMPLED[i, :, 0]]
            z = [(qj - ld) / temperature for qj, ld in zip(q, LOG_DENSITY[i])]
            lse = temperature * math.log(sum(math.exp(v) for v in z))
            rows.append(lse - (w_s * s + w_a * DATA["action"][i, 0] / 2.0 + b))
        gaps.append(sum(rows) / len(rows))
    return gaps


def regularise(policy):
    policy._cql_actions = lambda obs, next_obs, rows, noise: (torch.from_numpy(SAMPLED),
                                                              torch.from_numpy(LOG_DENSITY))
    b = to_torch({k: v for k, v in DATA.items() if k != "truncated"}, "cpu")
    loss, _, stats = policy._regulariser(b, policy.box.to_unit(b["action"]), {})
    return loss, stats


@pytest.mark.parametrize("temperature", [1.0, 2.0])
def test_the_penalty_matches_a_hand_computed_value(temperature):
    loss, stats = regularise(linear_cql({"cql_temperature": temperature}))
    gaps = hand_gaps(temperature)
    assert loss.item() == pytest.approx(3.0 * sum(gaps), rel=1e-5)
    assert stats["cql_gap"].item() == pytest.approx(sum(gaps) / 2, rel=1e-5)


def test_the_lagrange_penalty_is_weighted_by_alpha_prime_and_measured_from_tau():
    policy = linear_cql({"lagrange_threshold": 0.25, "init_alpha_prime": 2.0})
    loss, stats = regularise(policy)
    assert stats["alpha_prime"].item() == pytest.approx(2.0)
    assert loss.item() == pytest.approx(2.0 * 3.0 * (sum(hand_gaps()) - 2 * 0.25), rel=1e-5)


def test_importance_logsumexp_subtracts_the_uniform_box_density():
    q = torch.tensor([[0.0, 1.0]])
    uniform = torch.full((1, 2), 2 * math.log(0.5))  # a 2-D box: density 1/4
    expected = math.log(4 * (1 + math.e))
    assert importance_logsumexp(q, uniform).item() == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("tau, moves", [(1e3, "down"), (-1e3, "up")])
def test_the_lagrange_multiplier_moves_toward_holding_the_gap_at_tau(tau, moves):
    policy = CQLPolicy({"seed": 0, "model": {"actor_hidden": (8,), "critic_hidden": (8,)},
                        "learn": {"lagrange_threshold": tau, "cql_n_actions": 2}}, OBS1, ACT1)
    rng = np.random.default_rng(0)
    start = policy.alpha_prime
    for _ in range(5):
        data = {**DATA, "obs": rng.uniform(-1, 1, (2, 1)).astype(np.float32)}
        out = policy.learn_mode.forward(data)
    assert (policy.alpha_prime < start) if moves == "down" else (policy.alpha_prime > start)
    assert out["cql_gap"] < tau if moves == "down" else out["cql_gap"] > tau


def test_without_a_threshold_alpha_prime_stays_put():
    policy = linear_cql()
    out = policy.learn_mode.forward(DATA)
    assert policy.alpha_prime == 1.0 and "alpha_prime" not in out and "cql_gap" in out


def test_the_sampled_actions_lie_in_the_box_with_their_densities():
    policy = CQLPolicy({"seed": 0, "model": {"actor_hidden": (8,), "critic_hidden": (8,)},
                        "learn": {"cql_n_actions": 4}}, gym.spaces.Box(-1, 1, (3,)),
                       gym.spaces.Box(-1, 1, (2,)))
    obs = torch.randn(5, 3)
    actions, log_density = policy._cql_actions(obs, obs + 1, 5, policy._critic_noise(5))
    assert actions.shape == (5, 12, 2) and log_density.shape == (5, 12)
    assert actions.abs().max() <= 1.0
    assert torch.all(log_density[:, :4] == 2 * math.log(0.5))  # the uniform box [-1, 1]^2
    assert not torch.equal(actions[:, 4:8], actions[:, 8:])  # π(·|s) and π(·|s') differ


@pytest.mark.parametrize("learn", [{"lagrange_threshold": 1.0, "max_q_backup": True},
                                   {"backup_entropy": True}])
def test_a_state_round_trip_gives_identical_next_updates(learn):
    def make(seed):
        return CQLPolicy({"seed": seed, "model": {"actor_hidden": (8,), "critic_hidden": (8,)},
                          "learn": {"cql_n_actions": 3, **learn}}, OBS1, ACT1)

    rng = np.random.default_rng(1)

    def data():
        return {**DATA, "obs": rng.uniform(-1, 1, (2, 1)).astype(np.float32),
                "reward": rng.normal(size=2).astype(np.float32)}

    first = make(0)
    for _ in range(3):
        first.learn_mode.forward(data())
    second = make(7)
    second.load_state_dict(copy.deepcopy(first.state_dict()))
    for _ in range(2):
        batch = data()
        assert first.learn_mode.forward(batch) == second.learn_mode.forward(batch)
    assert_same_tensors(first.state_dict(), second.state_dict())
    state = first.state_dict()
    del state["alpha_prime_optimizer"]
    with pytest.raises(KeyError, match="alpha_prime_optimizer"):
        second.load_state_dict(state)


def test_registered_offline_with_sac_faces_and_guarded_settings():
    assert get_policy("cql") is CQLPolicy and CQLPolicy.pipeline == "offline"
    policy = linear_cql()
    obs = np.zeros((4, 1), np.float32)
    assert policy.collect_mode.forward(obs)["action"].shape == (4, 1)
    assert np.all(np.abs(policy.eval_mode.forward(obs)["action"]) <= 2.0)
    with pytest.raises(ValueError, match="policy.learn.cql_n_actions must be >= 1"):
        linear_cql({"cql_n_actions": 0})
    with pytest.raises(ValueError, match="policy.learn.cql_temperature must be > 0"):
        linear_cql({"cql_temperature": 0.0})


@pytest.mark.parametrize("bc_steps", [0, 5])
def test_during_bc_steps_the_actor_clones_the_data_whatever_the_critics(bc_steps):
    def actor_loss(critic_bias):
        policy = linear_cql({"bc_steps": bc_steps})
        with torch.no_grad():
            for net in policy.critic.q_nets:
                net.net[0].bias.fill_(critic_bias)
                net.net[0].weight.mul_(critic_bias)
        return policy.learn_mode.forward(DATA)["actor_loss"]

    same = actor_loss(1.0) == actor_loss(-3.0)
    assert same if bc_steps else not same
