"""IQLPolicy: expectile, value, critic and actor losses of one step against a hand computation
(Gaussian and deterministic actors, clipped weights), the cosine actor lr, acting, round trips,
bad batches, and learning on medium-quality Pendulum data (slow)."""
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlpipe.policies import IQLPolicy, get_policy
from rlpipe.policies.iql import expectile_loss
from tests.offline.experts import pendulum_expert, rollout_buffer

from .helpers import (ACT1, BOX_ACTION, NEXT_OBS, OBS, OBS2, REWARD, TERMINATED, box_batch,
                      merged, round_trip_gives_identical_updates, set_linear,
                      train_and_evaluate)

LINEAR = {"model": {"actor_hidden": (), "critic_hidden": (), "value_hidden": ()},
          "learn": {"batch_size": 3}}


def make(cfg=None, seed=0):
    return IQLPolicy(merged(merged(LINEAR, {"seed": seed}), cfg), OBS2, ACT1)


def test_registered_with_the_papers_settings():
    assert get_policy("iql") is IQLPolicy and IQLPolicy.pipeline == "offline"
    learn = IQLPolicy.default_config().learn
    assert (learn.expectile, learn.beta, learn.max_weight, learn.tau) == (0.7, 3.0, 100.0, 0.005)
    assert learn.actor_lr == learn.critic_lr == learn.value_lr == 3e-4


def test_expectile_loss_weights_the_two_signs_asymmetrically():
    u = torch.tensor([-2.0, 1.0, 3.0])
    assert float(expectile_loss(u, 0.7)) == pytest.approx((0.3 * 4 + 0.7 * 1 + 0.7 * 9) / 3)
    assert float(expectile_loss(u, 0.5)) == pytest.approx(0.5 * float((u ** 2).mean()))


def _linear(layer):
    return layer.weight.detach().double().numpy().reshape(-1), float(layer.bias.detach())


@pytest.mark.parametrize("actor, beta", [("deterministic", 3.0), ("gaussian", 3.0),
                                         ("deterministic", 50.0)])
def test_one_step_matches_the_papers_losses(actor, beta):
    policy = make({"model": {"actor": actor}, "learn": {"beta": beta}})
    for i, layer in enumerate(q.net[0] for q in policy.critic.q_nets):  # online ≠ target
        set_linear(layer, [[0.3 - i, 0.2, 0.5 + i]], [0.1 * i])
    for i, layer in enumerate(q.net[0] for q in policy.critic_target.q_nets):
        set_linear(layer, [[0.4, -0.3 + i, 1.0 - 2 * i]], [-0.2 + 0.3 * i])
    set_linear(policy.value.head, [[0.25, -0.5]], [0.05])
    head = policy.actor.mean_head if actor == "gaussian" else policy.actor.head
    set_linear(head, [[0.5, -0.25]], [0.1])
    if actor == "gaussian":
        with torch.no_grad():
            policy.actor.log_std.fill_(-0.5)
    online = [_linear(q.net[0]) for q in policy.critic.q_nets]
    target = [_linear(q.net[0]) for q in policy.critic_target.q_nets]
    v_before = _linear(policy.value.head)

    stats = policy.learn_mode.forward(box_batch())

    s, s2 = OBS.astype(np.float64), NEXT_OBS.astype(np.float64)
    a = BOX_ACTION[:, 0].astype(np.float64) / 2.0  # Box(-2, 2) → the actor's units

    def q(params, obs):
        w, b = params
        return obs @ w[:2] + a * w[2] + b

    q_hat = np.minimum(q(target[0], s), q(target[1], s))
    u = q_hat - (s @ v_before[0] + v_before[1])
    value_loss = np.mean(np.abs(0.7 - (u < 0)) * u ** 2)
    vw, vb = _linear(policy.value.head)  # V after its step: the critic and actor use it
    v, v_next = s @ vw + vb, s2 @ vw + vb
    y = REWARD + 0.99 * (1.0 - TERMINATED) * v_next
    critic_loss = sum(np.mean((q(p, s) - y) ** 2) for p in online)
    weight = np.minimum(np.exp(beta * (q_hat - v)), 100.0)
    mean = np.tanh(s @ np.array([0.5, -0.25]) + 0.1)
    if actor == "gaussian":
        log_prob = -0.5 * ((a - mean) / math.exp(-0.5)) ** 2 + 0.5 - 0.5 * math.log(2 * math.pi)
        actor_loss = -np.mean(weight * log_prob)
    else:
        actor_loss = np.mean(weight * (mean - a) ** 2)
    expected = dict(value_loss=value_loss, critic_loss=critic_loss, target_mean=y.mean(),
                    v_mean=v.mean(), adv_mean=(q_hat - v).mean(), weight_mean=weight.mean(),
                    actor_loss=actor_loss)
    for key, value in expected.items():
        assert stats[key] == pytest.approx(value, rel=1e-4, abs=1e-6), key
    if beta == 50.0:
        assert (weight == 100.0).any() and stats["weight_mean"] <= 100.0


def test_the_target_critics_follow_by_polyak_averaging():
    policy = make({"learn": {"tau": 0.25}})
    for layer in (q.net[0] for q in policy.critic.q_nets):
        set_linear(layer, [[1.0, 1.0, 1.0]], [1.0])
    before = [p.detach().clone() for p in policy.critic_target.parameters()]
    policy.learn_mode.forward(box_batch())
    for old, new, online in zip(before, policy.critic_target.parameters(),
                                policy.critic.parameters()):
        torch.testing.assert_close(new, 0.75 * old + 0.25 * online.detach())


def test_cosine_schedule_decays_the_actor_lr_to_zero_and_stays_there():
    policy = make({"learn": {"actor_lr": 1e-3, "actor_lr_cosine_steps": 4}})
    seen = []
    for _ in range(6):
        policy.learn_mode.forward(box_batch())
        seen.append(policy.actor_optimizer.param_groups[0]["lr"])
    expected = [1e-3 * 0.5 * (1 + math.cos(math.pi * min(t, 4) / 4)) for t in range(6)]
    assert seen == pytest.approx(expected)
    assert policy.critic_optimizer.param_groups[0]["lr"] == 3e-4  # only the actor's decays


def test_truncation_bootstraps_and_termination_does_not():
    truncated = dict(box_batch(), terminated=np.zeros(3, bool), truncated=np.ones(3, bool))
    terminated = dict(box_batch(), terminated=np.ones(3, bool), truncated=np.zeros(3, bool))
    policy = make()
    stats = policy.learn_mode.forward(truncated)
    with torch.no_grad():  # V after its step, which the critic's target uses
        v_next = policy.value(torch.as_tensor(NEXT_OBS)).numpy()
    assert stats["target_mean"] == pytest.approx(np.mean(REWARD + 0.99 * v_next), rel=1e-5)
    assert abs(np.mean(0.99 * v_next)) > 1e-3  # the two cases differ
    assert make().learn_mode.forward(terminated)["target_mean"] == pytest.approx(REWARD.mean())


def test_reward_norm_scales_rewards_by_1000_over_the_return_range():
    plain, scaled = make(), make({"learn": {"reward_norm": "return_range"}})
    plain.set_return_range(-300.0, -100.0)  # reward_norm "none": nothing changes
    assert plain.reward_scale == 1.0
    with pytest.raises(RuntimeError, match=r"set_return_range\(min, max\)"):
        scaled.learn_mode.forward(box_batch())
    with pytest.raises(ValueError, match="episode returns that differ, got min -5.0 and max -5.0"):
        scaled.set_return_range(-5.0, -5.0)
    scaled.set_return_range(-300.0, -100.0)
    assert scaled.reward_scale == pytest.approx(5.0)
    # the value step does not read rewards, so both V (and the bootstrap) are the same
    gap = scaled.learn_mode.forward(box_batch())["target_mean"] - \
        plain.learn_mode.forward(box_batch())["target_mean"]
    assert gap == pytest.approx(4.0 * REWARD.mean(), rel=1e-4)
    clone = make({"learn": {"reward_norm": "return_range"}}, seed=5)
    clone.load_state_dict(scaled.state_dict())  # the scale travels with the state
    assert clone.reward_scale == pytest.approx(5.0)
    old = {k: v for k, v in plain.state_dict().items() if k != "reward_scale"}
    clone.load_state_dict(old)  # a checkpoint from before the option: unscaled rewards
    assert clone.reward_scale == 1.0
    with pytest.raises(ValueError, match="policy.learn.reward_norm must be one of"):
        make({"learn": {"reward_norm": "minmax"}})


def test_acting_gaussian_samples_in_the_box_and_eval_is_the_mean():
    policy = make({"model": {"actor_hidden": (8,)}})
    many = np.repeat(OBS[:1], 4000, axis=0)
    action = policy.collect_mode.forward(many)["action"]
    assert action.shape == (4000, 1) and action.min() >= -2.0 and action.max() <= 2.0
    mean = policy.eval_mode.forward(OBS[:1])["action"][0, 0]
    assert action.std() > 0.5 and abs(np.median(action) - mean) < 0.1
    deterministic = make({"model": {"actor": "deterministic"},
                          "collect": {"noise_scale": 0.0}})
    np.testing.assert_array_equal(deterministic.collect_mode.forward(OBS)["action"],
                                  deterministic.eval_mode.forward(OBS)["action"])
    with pytest.raises(TypeError, match="unexpected collect kwargs \\['eps'\\]"):
        policy.collect_mode.forward(OBS, eps=0.1)


@pytest.mark.parametrize("cfg", [{}, {"model": {"actor": "deterministic"},
                                      "learn": {"actor_lr_cosine_steps": 5}}])
def test_state_round_trip_gives_identical_next_updates(cfg):
    rng = np.random.default_rng(2)

    def batch():
        return dict(box_batch(), obs=rng.normal(size=(3, 2)).astype(np.float32),
                    next_obs=rng.normal(size=(3, 2)).astype(np.float32),
                    action=rng.uniform(-2, 2, (3, 1)).astype(np.float32))

    hidden = {"model": {"actor_hidden": (8,), "critic_hidden": (8,), "value_hidden": (8,)}}
    round_trip_gives_identical_updates(lambda seed=0: make(merged(hidden, cfg), seed=seed),
                                       [batch() for _ in range(6)])


def test_bad_batches_and_settings_are_one_clear_error():
    batch = box_batch()
    del batch["reward"]
    with pytest.raises(KeyError) as info:
        make().learn_mode.forward(batch)
    assert "IQL learn batch lacks ['reward']" in str(info.value)
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="policy.learn.expectile must be in \\(0, 1\\)"):
        make({"learn": {"expectile": 1.0}})
    with pytest.raises(ValueError, match="policy.model.actor must be one of"):
        make({"model": {"actor": "beta"}})
    with pytest.raises(Exception, match="does not support the action space Discrete"):
        IQLPolicy({}, OBS2, gym.spaces.Discrete(2))


@pytest.mark.slow
def test_iql_on_medium_pendulum_data():
    buffer = rollout_buffer("Pendulum-v1", pendulum_expert, 20_000, noise=0.3, seed=0)
    env = gym.make("Pendulum-v1")
    # beta 0.5, not the paper's 3.0: Pendulum's rewards reach -16 per step, and in a budget
    # this short the critic is far from converged, so exp(3 A) mostly weighs noise.
    policy = IQLPolicy({"seed": 0, "model": {"actor_hidden": (64, 64), "critic_hidden": (64, 64),
                                             "value_hidden": (64, 64)},
                        "learn": {"beta": 0.5}}, env.observation_space, env.action_space)
    score, seconds = train_and_evaluate(policy, buffer, "Pendulum-v1", steps=2000)
    print(f"IQL Pendulum (noise 0.3 data): return {score:.1f} in {seconds:.1f} s")
    assert score >= -300
