"""BCPolicy: the three losses against hand-computed values, acting with eps, Dict observations,
state round trips, bad batches, and learning from scripted experts (slow)."""
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlpipe.policies import BCPolicy, get_policy
from tests.offline.experts import (cartpole_expert, pendulum_expert, rollout_buffer)

from .helpers import (ACT1, BOX_ACTION, CHOICE3, OBS, OBS2, box_batch, merged,
                      round_trip_gives_identical_updates, set_linear, train_and_evaluate)

W = np.array([[0.5, -1.0], [1.0, 0.25], [-0.5, 0.0]], np.float32)
B = np.array([0.1, -0.2, 0.3], np.float32)
CHOICES = np.array([1, 3, 2])  # env actions of Discrete(3, start=1)


def make(cfg=None, obs_space=OBS2, action_space=CHOICE3, seed=0):
    base = {"seed": seed, "model": {"hidden": ()}, "learn": {"batch_size": 3}}
    return BCPolicy(merged(base, cfg), obs_space, action_space)


def test_registered_with_its_pipeline_and_defaults():
    assert get_policy("bc") is BCPolicy and BCPolicy.pipeline == "offline"
    assert BCPolicy.explores_with_eps
    cfg = BCPolicy.default_config()
    assert cfg.learn.loss == "mse" and cfg.learn.batch_size == 256 and cfg.learn.lr == 3e-4


def test_discrete_loss_is_cross_entropy_of_the_logits():
    policy = make()
    set_linear(policy.net.head, W, B)
    logits = OBS.astype(np.float64) @ W.T + B
    log_z = np.log(np.exp(logits).sum(1))
    expected = np.mean(log_z - logits[np.arange(3), CHOICES - 1])
    stats = policy.learn_mode.forward({"obs": OBS, "action": CHOICES})
    assert stats["loss"] == pytest.approx(expected, rel=1e-5)
    assert policy.train_iter == 1


def test_box_mse_loss_is_in_the_actors_unit_box():
    policy = make(action_space=ACT1)
    set_linear(policy.net.head, [[0.5, -0.25]], [0.1])
    mu = np.tanh(OBS.astype(np.float64) @ np.array([0.5, -0.25]) + 0.1)
    expected = np.mean((mu - BOX_ACTION[:, 0] / 2.0) ** 2)  # Box(-2, 2): unit = action / 2
    assert policy.learn_mode.forward(box_batch())["loss"] == pytest.approx(expected, rel=1e-5)


def test_box_gaussian_loss_is_the_negative_log_likelihood_of_the_clipped_gaussian():
    policy = make({"learn": {"loss": "gaussian"}}, action_space=ACT1)
    set_linear(policy.net.mean_head, [[0.5, -0.25]], [0.1])
    with torch.no_grad():
        policy.net.log_std.fill_(-0.5)
    mean = np.tanh(OBS.astype(np.float64) @ np.array([0.5, -0.25]) + 0.1)
    z = (BOX_ACTION[:, 0] / 2.0 - mean) / math.exp(-0.5)
    expected = np.mean(0.5 * z ** 2 - 0.5 + 0.5 * math.log(2 * math.pi))
    # eval acts with the mean, scaled onto the env's bounds
    np.testing.assert_allclose(policy.eval_mode.forward(OBS)["action"][:, 0], 2.0 * mean,
                               rtol=1e-5)
    assert policy.learn_mode.forward(box_batch())["loss"] == pytest.approx(expected, rel=1e-5)


def test_collect_is_greedy_without_eps_and_uniform_with_eps_one():
    policy = make()
    set_linear(policy.acting.head, W, B)
    greedy = (OBS @ W.T + B).argmax(1) + 1
    np.testing.assert_array_equal(policy.collect_mode.forward(OBS)["action"], greedy)
    many = np.repeat(OBS, 3000, axis=0)
    counts = np.bincount(policy.collect_mode.forward(many, eps=1.0)["action"], minlength=4)
    assert counts[0] == 0 and all(abs(c / len(many) - 1 / 3) < 0.03 for c in counts[1:])
    box = make(action_space=ACT1)
    action = box.collect_mode.forward(many, eps=1.0)["action"]
    assert action.shape == (len(many), 1) and action.dtype == np.float32
    assert action.min() >= -2.0 and action.max() <= 2.0 and abs(action.mean()) < 0.1
    assert action.std() == pytest.approx(4.0 / math.sqrt(12.0), rel=0.05)  # uniform on [-2, 2]


def test_refresh_copies_the_learned_weights_into_the_acting_copy():
    policy = make()
    set_linear(policy.net.head, W, B)
    assert not torch.equal(policy.acting.head.weight, policy.net.head.weight)
    policy.collect_mode.refresh()
    np.testing.assert_array_equal(policy.collect_mode.forward(OBS)["action"],
                                  policy.eval_mode.forward(OBS)["action"])


def test_dict_observations_go_through_the_encoders():
    space = gym.spaces.Dict({"pos": gym.spaces.Box(-1, 1, (2,), np.float32),
                             "kind": gym.spaces.Discrete(3)})
    policy = make({"model": {"hidden": (8,)}}, obs_space=space, action_space=gym.spaces.Discrete(2))
    obs = {"pos": np.zeros((4, 2), np.float32), "kind": np.array([0, 1, 2, 0])}
    stats = policy.learn_mode.forward({"obs": obs, "action": np.array([0, 1, 1, 0])})
    assert np.isfinite(stats["loss"])
    assert policy.eval_mode.forward(obs)["action"].shape == (4,)


@pytest.mark.parametrize("cfg, action_space", [({}, CHOICE3),
                                               ({"learn": {"loss": "gaussian"}}, ACT1),
                                               ({"learn": {"loss": "mse"}}, ACT1)])
def test_state_round_trip_gives_identical_next_updates(cfg, action_space):
    rng = np.random.default_rng(0)

    def batch():
        action = (rng.integers(1, 4, 8) if action_space is CHOICE3
                  else rng.uniform(-2, 2, (8, 1)).astype(np.float32))
        return {"obs": rng.normal(size=(8, 2)).astype(np.float32), "action": action}

    round_trip_gives_identical_updates(
        lambda seed=0: make(merged({"model": {"hidden": (8,)}}, cfg), action_space=action_space,
                            seed=seed), [batch() for _ in range(6)])


def test_a_batch_without_actions_is_one_clear_error():
    with pytest.raises(KeyError) as info:
        make().learn_mode.forward({"obs": OBS, "reward": np.zeros(3, np.float32)})
    message = str(info.value)
    assert "BC learn batch lacks ['action']" in message and "'reward'" in message
    assert "\n" not in message


def test_bad_settings_and_spaces_are_refused():
    with pytest.raises(ValueError, match="policy.learn.loss must be one of"):
        make({"learn": {"loss": "huber"}}, action_space=ACT1)
    with pytest.raises(Exception, match="does not support the action space MultiDiscrete"):
        make(action_space=gym.spaces.MultiDiscrete([2, 2]))


@pytest.mark.slow
def test_bc_clones_the_cartpole_expert_from_noisy_data():
    buffer = rollout_buffer("CartPole-v1", cartpole_expert, 20_000, noise=0.2, seed=0)
    env = gym.make("CartPole-v1")
    policy = BCPolicy({"seed": 0, "model": {"hidden": (64, 64)}}, env.observation_space,
                      env.action_space)
    score, seconds = train_and_evaluate(policy, buffer, "CartPole-v1", steps=1500)
    print(f"BC CartPole (eps=0.2 data): return {score:.1f} in {seconds:.1f} s")
    assert score >= 450


@pytest.mark.slow
def test_bc_clones_the_pendulum_expert():
    buffer = rollout_buffer("Pendulum-v1", pendulum_expert, 20_000, noise=0.1, seed=0)
    env = gym.make("Pendulum-v1")
    policy = BCPolicy({"seed": 0, "model": {"hidden": (128, 128)}}, env.observation_space,
                      env.action_space)
    score, seconds = train_and_evaluate(policy, buffer, "Pendulum-v1", steps=4000)
    print(f"BC Pendulum (noise 0.1 data): return {score:.1f} in {seconds:.1f} s")
    assert score >= -300
