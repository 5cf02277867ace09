"""TD3BCPolicy: the actor loss −λ Q1(s, π(s)) + (π(s) − a)² against a hand computation, the
observation normaliser in every face and in the state, round trips, bad batches, and learning
on medium-quality Pendulum data (slow)."""
import gymnasium as gym
import numpy as np
import pytest

from rlpipe.policies import TD3BCPolicy, TD3Policy, get_policy
from tests.offline.experts import pendulum_expert, rollout_buffer

from .helpers import (ACT1, BOX_ACTION, OBS, OBS2, box_batch, merged,
                      round_trip_gives_identical_updates, set_linear, train_and_evaluate)

MEAN = np.array([0.25, 0.5], np.float32)
STD = np.array([0.5, 2.0], np.float32)


def make(cfg=None, obs_space=OBS2, seed=0):
    base = {"seed": seed, "model": {"actor_hidden": (), "critic_hidden": ()},
            "learn": {"batch_size": 3, "policy_delay": 1}}
    return TD3BCPolicy(merged(base, cfg), obs_space, ACT1)


def test_registered_as_an_offline_td3_with_the_papers_alpha():
    assert get_policy("td3-bc") is TD3BCPolicy and issubclass(TD3BCPolicy, TD3Policy)
    assert TD3BCPolicy.pipeline == "offline" and not TD3BCPolicy.explores_with_eps
    cfg = TD3BCPolicy.default_config()
    assert cfg.learn.alpha == 2.5 and cfg.learn.policy_delay == 2 and cfg.learn.tau == 0.005


def test_actor_loss_is_lambda_weighted_q_plus_behaviour_cloning():
    policy = make()
    policy.set_obs_normalizer(MEAN, STD)
    w, b = np.array([0.5, -0.25]), 0.1
    set_linear(policy.actor.head, [w], [b])
    stats = policy.learn_mode.forward(box_batch())  # critic step, then the actor's
    q_layer = policy.critic.q_nets[0].net[0]  # the critic the actor loss saw (after its step)
    qw = q_layer.weight.detach().double().numpy()[0]
    qb = float(q_layer.bias.detach())
    s = (OBS.astype(np.float64) - MEAN) / (STD + 1e-3)
    pi = np.tanh(s @ w + b)
    q = s @ qw[:2] + pi * qw[2] + qb
    q_lambda = 2.5 / np.abs(q).mean()
    bc = np.mean((pi - BOX_ACTION[:, 0] / 2.0) ** 2)
    assert stats["q_lambda"] == pytest.approx(q_lambda, rel=1e-4)
    assert stats["bc_loss"] == pytest.approx(bc, rel=1e-4)
    assert stats["actor_loss"] == pytest.approx(-q_lambda * q.mean() + bc, rel=1e-4)


def test_alpha_zero_is_pure_behaviour_cloning_of_the_actor():
    policy = make({"learn": {"alpha": 0.0}})
    stats = policy.learn_mode.forward(box_batch())
    assert stats["q_lambda"] == 0.0 and stats["actor_loss"] == pytest.approx(stats["bc_loss"])


def test_the_normaliser_acts_in_every_face_as_if_the_data_were_normalised():
    normed = make({"collect": {"noise_scale": 0.3}, "model": {"actor_hidden": (8,)}})
    plain = make({"collect": {"noise_scale": 0.3}, "model": {"actor_hidden": (8,)}})
    normed.set_obs_normalizer(MEAN, STD)

    def by_hand(obs):
        return ((obs - MEAN) / (STD + 1e-3)).astype(np.float32)

    batch = box_batch()
    hand = dict(batch, obs=by_hand(batch["obs"]), next_obs=by_hand(batch["next_obs"]))
    for _ in range(3):
        assert normed.learn_mode.forward(batch) == plain.learn_mode.forward(hand)
    normed.collect_mode.refresh()
    plain.collect_mode.refresh()
    np.testing.assert_array_equal(normed.collect_mode.forward(OBS)["action"],
                                  plain.collect_mode.forward(by_hand(OBS))["action"])
    np.testing.assert_array_equal(normed.eval_mode.forward(OBS)["action"],
                                  plain.eval_mode.forward(by_hand(OBS))["action"])
    assert not np.array_equal(normed.eval_mode.forward(OBS)["action"],
                              plain.eval_mode.forward(OBS)["action"])


def test_the_normaliser_is_saved_and_round_trips_give_identical_updates():
    rng = np.random.default_rng(1)

    def batch():
        return dict(box_batch(), obs=rng.normal(size=(3, 2)).astype(np.float32),
                    action=rng.uniform(-2, 2, (3, 1)).astype(np.float32))

    def build(seed=0):
        policy = make({"model": {"actor_hidden": (8,), "critic_hidden": (8,)},
                       "learn": {"policy_delay": 2}}, seed=seed)
        if seed == 0:  # the loaded one gets its normaliser from the state only
            policy.set_obs_normalizer(MEAN, STD)
        return policy

    round_trip_gives_identical_updates(build, [batch() for _ in range(7)])
    assert build(seed=5).state_dict()["obs_normalizer"] == {"mean": None, "std": None}


def test_normaliser_errors_name_the_problem():
    with pytest.raises(ValueError, match="need 2 values"):
        make().set_obs_normalizer([0.0], [1.0])
    with pytest.raises(ValueError, match="finite and std >= 0"):
        make().set_obs_normalizer([0.0, np.nan], [1.0, 1.0])
    space = gym.spaces.Dict({"pos": gym.spaces.Box(-1, 1, (2,), np.float32)})
    with pytest.raises(ValueError, match="only vector observations can be normalised"):
        make({"model": {"actor_hidden": (4,), "critic_hidden": (4,)}},
             obs_space=space).set_obs_normalizer([0.0, 0.0], [1.0, 1.0])


def test_a_batch_without_next_obs_is_one_clear_error():
    batch = box_batch()
    del batch["next_obs"]
    with pytest.raises(KeyError) as info:
        make().learn_mode.forward(batch)
    message = str(info.value)
    assert "TD3+BC learn batch lacks ['next_obs']" in message and "\n" not in message


@pytest.mark.slow
def test_td3_bc_on_medium_pendulum_data():
    buffer = rollout_buffer("Pendulum-v1", pendulum_expert, 20_000, noise=0.3, seed=0)
    env = gym.make("Pendulum-v1")
    policy = TD3BCPolicy({"seed": 0, "model": {"actor_hidden": (64, 64),
                                               "critic_hidden": (64, 64)}},
                         env.observation_space, env.action_space)
    obs = buffer.sample(20_000)["obs"]  # the pipeline normalises with the whole data set's
    policy.set_obs_normalizer(obs.mean(0), obs.std(0))
    score, seconds = train_and_evaluate(policy, buffer, "Pendulum-v1", steps=2500)
    print(f"TD3+BC Pendulum (noise 0.3 data): return {score:.1f} in {seconds:.1f} s")
    assert score >= -300
