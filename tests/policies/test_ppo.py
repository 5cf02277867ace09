"""PPOPolicy: the three faces, the clipped objective, schedules and state."""
import io
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlpipe.config import ConfigError
from rlpipe.policies import PPOPolicy, UnsupportedSpaceError, get_policy

VEC4 = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
ACT2 = gym.spaces.Discrete(2)
BOX2 = gym.spaces.Box(np.array([-2.0, -1.0], np.float32), np.array([2.0, 1.0], np.float32))


def ppo(cfg=None, obs_space=VEC4, action_space=ACT2):
    base = {"seed": 0}
    for key, value in (cfg or {}).items():
        if isinstance(value, dict):
            base.setdefault(key, {}).update(value)
        else:
            base[key] = value
    return PPOPolicy(base, obs_space, action_space)


def obs_batch(n=8, seed=0):
    return np.random.default_rng(seed).normal(size=(n, 4)).astype(np.float32)


def rollout(policy, n=64, seed=0, adv=None):
    """A batch as gae_estimator would write it, from the policy's own collect face."""
    obs = obs_batch(n, seed)
    out = policy.collect_mode.forward(obs)
    rng = np.random.default_rng(seed + 1)
    batch = {"obs": obs, **out}
    batch["adv"] = (rng.normal(size=n) if adv is None else np.broadcast_to(adv, n)).astype(np.float32)
    batch["return"] = (batch["value"] + batch["adv"]).astype(np.float32)
    return batch


def test_registered_and_spaces_checked():
    assert get_policy("ppo") is PPOPolicy
    with pytest.raises(UnsupportedSpaceError, match="PPOPolicy"):
        PPOPolicy({}, VEC4, gym.spaces.Dict(a=gym.spaces.Discrete(2)))
    with pytest.raises(UnsupportedSpaceError, match="observation"):
        PPOPolicy({}, gym.spaces.Text(3), ACT2)


@pytest.mark.parametrize("cfg, match", [
    ({"learn": {"lr_schedule": "linear"}}, "lr_decay_env_steps"),
    ({"learn": {"lr_schedule": "cosine"}}, "lr_schedule"),
    ({"learn": {"clip_ratio": 0.0}}, "clip_ratio"),
    ({"learn": {"reward_scale": None}}, "reward_scale"),
    ({"learn": {"gae_lambda": 1.5}}, "gae_lambda"),
    ({"model": {"activation": "sigmoid"}}, "activation"),
])
def test_bad_settings_are_named(cfg, match):
    with pytest.raises(ValueError, match=match):
        ppo(cfg)


def test_unknown_key_is_a_config_error():
    with pytest.raises(ConfigError, match="policy.learn.clip_ration"):
        ppo({"learn": {"clip_ration": 0.1}})


def test_discrete_collect_outputs_and_logp():
    policy = ppo(action_space=gym.spaces.Discrete(3, start=1))
    obs = obs_batch()
    out = policy.collect_mode.forward(obs)
    assert set(out) == {"action", "logp", "value"}
    assert out["action"].shape == (8,) and set(out["action"]) <= {1, 2, 3}
    assert out["logp"].dtype == np.float32 and out["value"].dtype == np.float32
    with torch.no_grad():
        dist, value = policy.model(torch.as_tensor(obs))
        expected = dist.log_prob(torch.as_tensor(out["action"] - 1)).numpy()
    np.testing.assert_allclose(out["logp"], expected, rtol=1e-5)
    np.testing.assert_allclose(out["value"], value.numpy(), rtol=1e-5)
    np.testing.assert_allclose(policy.collect_mode.value(obs), out["value"], rtol=1e-6)


def test_continuous_actions_are_clipped_but_logp_is_of_the_raw_sample():
    policy = ppo({"model": {"init_log_std": 1.0}}, action_space=BOX2)  # std e: many clipped
    obs = obs_batch(256)
    out = policy.collect_mode.forward(obs)
    assert out["action"].shape == (256, 2) and out["raw_action"].shape == (256, 2)
    assert (out["action"] >= BOX2.low).all() and (out["action"] <= BOX2.high).all()
    assert (np.abs(out["raw_action"]) > BOX2.high).any()  # some samples were outside the box
    np.testing.assert_array_equal(out["action"], np.clip(out["raw_action"], BOX2.low, BOX2.high))
    with torch.no_grad():
        mean = policy.model.dist(torch.as_tensor(obs)).base_dist.loc.numpy()
    std = math.e
    manual = (-0.5 * ((out["raw_action"] - mean) / std) ** 2 - math.log(std)
              - 0.5 * math.log(2 * math.pi)).sum(1)
    np.testing.assert_allclose(out["logp"], manual, rtol=1e-4, atol=1e-4)


def test_eval_is_deterministic_mode():
    discrete, continuous = ppo(), ppo(action_space=BOX2)
    obs = obs_batch(32)
    a1, a2 = discrete.eval_mode.forward(obs)["action"], discrete.eval_mode.forward(obs)["action"]
    np.testing.assert_array_equal(a1, a2)
    with torch.no_grad():
        np.testing.assert_array_equal(
            a1, discrete.model.dist(torch.as_tensor(obs)).logits.argmax(1).numpy())
        mean = continuous.model.dist(torch.as_tensor(obs)).base_dist.loc.numpy()
    np.testing.assert_allclose(continuous.eval_mode.forward(obs)["action"],
                               np.clip(mean, BOX2.low, BOX2.high))


def test_same_seed_same_samples():
    obs = obs_batch()
    a, b = ppo(action_space=BOX2), ppo(action_space=BOX2)
    np.testing.assert_array_equal(a.collect_mode.forward(obs)["raw_action"],
                                  b.collect_mode.forward(obs)["raw_action"])


def test_learn_runs_epochs_of_minibatches_and_reports_means():
    policy = ppo({"learn": {"epoch_per_collect": 3, "batch_size": 20}})
    stats = policy.learn_mode.forward(rollout(policy, n=64))
    assert stats["n_updates"] == 3 * 4 and policy.learn_mode.train_iter == 12
    assert set(stats) == {"policy_loss", "value_loss", "entropy", "approx_kl", "clip_frac",
                          "grad_norm", "lr", "n_updates"}
    assert all(math.isfinite(v) for v in stats.values())
    assert 0.0 <= stats["clip_frac"] <= 1.0 and stats["entropy"] > 0


def test_clipped_objective_and_value_clipping_match_the_formulas():
    policy = ppo({"learn": {"epoch_per_collect": 1, "batch_size": 64, "adv_norm": False,
                            "value_clip": 0.1}})
    batch = rollout(policy, n=64)
    shift = np.linspace(-0.5, 0.5, 64).astype(np.float32)  # ratios e^-0.5 .. e^0.5
    batch["logp"] = batch["logp"] + shift
    batch["value"] = batch["value"] + shift  # stored values away from the current ones
    ratio = np.exp(-shift)
    adv = batch["adv"]
    eps = 0.2
    expected_pg = np.maximum(-adv * ratio, -adv * np.clip(ratio, 1 - eps, 1 + eps)).mean()
    v_now = policy.collect_mode.value(batch["obs"])
    clipped = batch["value"] + np.clip(v_now - batch["value"], -0.1, 0.1)
    expected_v = 0.5 * np.maximum((v_now - batch["return"]) ** 2,
                                  (clipped - batch["return"]) ** 2).mean()
    stats = policy.learn_mode.forward(batch)  # one minibatch: stats are from before the step
    assert stats["policy_loss"] == pytest.approx(expected_pg, rel=1e-4, abs=1e-6)
    assert stats["value_loss"] == pytest.approx(expected_v, rel=1e-4)
    assert stats["clip_frac"] == pytest.approx(np.mean(np.abs(ratio - 1) > eps), abs=1e-6)
    assert stats["approx_kl"] == pytest.approx(np.mean((ratio - 1) + shift), rel=1e-4)


def test_positive_advantage_makes_the_action_more_likely():
    policy = ppo({"learn": {"lr": 1e-2, "adv_norm": False}})
    obs = obs_batch(64)
    batch = {"obs": obs, **policy.collect_mode.forward(obs)}
    batch["action"] = np.zeros(64, np.int64)
    with torch.no_grad():
        batch["logp"] = policy.model.dist(torch.as_tensor(obs)).log_prob(
            torch.zeros(64, dtype=torch.long)).numpy()
    batch["adv"] = np.ones(64, np.float32)
    batch["return"] = batch["value"]
    before = np.exp(batch["logp"]).mean()
    policy.learn_mode.forward(batch)
    with torch.no_grad():
        after = policy.model.dist(torch.as_tensor(obs)).probs[:, 0].mean().item()
    assert after > before + 0.05


def test_entropy_bonus_raises_entropy():
    def entropy_after(coef):
        policy = ppo({"learn": {"entropy_coef": coef, "lr": 1e-2}}, action_space=BOX2)
        batch = rollout(policy, n=128, adv=0.0)
        return policy.learn_mode.forward(batch), policy.model.log_std.detach().sum().item()
    _, log_std_plain = entropy_after(0.0)
    _, log_std_bonus = entropy_after(0.1)
    assert log_std_bonus > log_std_plain + 0.1


def test_refresh_copies_learned_weights_into_the_acting_copy():
    policy = ppo({"learn": {"lr": 1e-2}})
    obs = obs_batch()
    v0 = policy.collect_mode.value(obs)
    policy.learn_mode.forward(rollout(policy))
    np.testing.assert_array_equal(policy.collect_mode.value(obs), v0)  # acting copy untouched
    policy.collect_mode.refresh()
    with torch.no_grad():
        np.testing.assert_allclose(policy.collect_mode.value(obs),
                                   policy.model.value(torch.as_tensor(obs)).numpy(), rtol=1e-6)


def test_linear_lr_schedule_counts_env_steps():
    policy = ppo({"learn": {"lr": 1e-3, "lr_schedule": "linear", "lr_decay_env_steps": 128,
                            "epoch_per_collect": 1}})
    lrs = [policy.learn_mode.forward(rollout(policy, n=64))["lr"] for _ in range(3)]
    assert lrs == pytest.approx([1e-3, 5e-4, 0.0])
    assert policy.optimizer.param_groups[0]["lr"] == 0.0
    constant = ppo({"learn": {"epoch_per_collect": 1}})
    assert [constant.learn_mode.forward(rollout(constant))["lr"] for _ in range(2)] == [3e-4] * 2


def test_target_kl_stops_the_epochs_early():
    policy = ppo({"learn": {"epoch_per_collect": 10, "batch_size": 16, "lr": 1e-2,
                            "target_kl": 1e-9}})
    assert policy.learn_mode.forward(rollout(policy, n=64))["n_updates"] == 4


def test_missing_batch_keys_point_at_gae_estimator():
    policy = ppo()
    batch = rollout(policy)
    del batch["adv"]
    with pytest.raises(KeyError, match="gae_estimator"):
        policy.learn_mode.forward(batch)


def test_obs_norm_moves_after_learning_and_reaches_the_acting_copy():
    policy = ppo({"model": {"obs_norm": True}})
    batch = rollout(policy, n=64)
    batch["obs"] = batch["obs"] * 3 + 5
    policy.learn_mode.forward(batch)
    np.testing.assert_allclose(policy.model.obs_norm.mean.numpy(), batch["obs"].mean(0), rtol=1e-4)
    assert policy.acting.obs_norm.mean.abs().max() == 0  # until refresh
    policy.collect_mode.refresh()
    np.testing.assert_allclose(policy.acting.obs_norm.mean.numpy(), batch["obs"].mean(0), rtol=1e-4)


def test_state_dict_round_trips_through_weights_only_load():
    policy = ppo({"model": {"obs_norm": True}, "learn": {"lr_schedule": "linear",
                                                         "lr_decay_env_steps": 1000}},
                 action_space=BOX2)
    policy.learn_mode.forward(rollout(policy))
    buf = io.BytesIO()
    torch.save(policy.state_dict(), buf)
    buf.seek(0)
    state = torch.load(buf, weights_only=True)
    other = ppo({"seed": 1, "model": {"obs_norm": True},
                 "learn": {"lr_schedule": "linear", "lr_decay_env_steps": 1000}}, action_space=BOX2)
    other.load_state_dict(state)
    obs = obs_batch()
    for face in ("collect_mode", "eval_mode"):
        a, b = getattr(policy, face).forward(obs), getattr(other, face).forward(obs)
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
    assert other.train_iter == policy.train_iter and other.current_lr() == policy.current_lr()
    batch = rollout(policy, seed=3)
    sa, sb = policy.learn_mode.forward(batch), other.learn_mode.forward(batch)
    assert sa == pytest.approx(sb)
    with pytest.raises(KeyError, match="PPOPolicy.state_dict"):
        other.load_state_dict({"model": {}})


def test_dict_obs_minibatches_are_plain_tensors_covering_each_row_once_per_epoch():
    space = gym.spaces.Dict({"image": gym.spaces.Box(0, 10, (7, 7, 3), np.uint8),
                             "row": gym.spaces.Discrete(40)})
    policy = ppo({"learn": {"epoch_per_collect": 2, "batch_size": 16}}, space, ACT2)
    rng = np.random.default_rng(0)
    n = 40
    obs = {"image": rng.integers(0, 11, (n, 7, 7, 3), dtype=np.uint8),
           "row": np.arange(n, dtype=np.int64)}  # the row's number, to trace it
    batch = {"obs": obs, **policy.collect_mode.forward(obs)}
    batch["adv"] = rng.normal(size=n).astype(np.float32)
    batch["return"] = (batch["value"] + batch["adv"]).astype(np.float32)
    seen = []
    outputs = policy.model.outputs  # the network's pass that forward() and the update share

    def recording(mb):
        # plain dicts of dense tensors: no tree library between the rollout and the network
        assert type(mb) is dict and all(type(v) is torch.Tensor for v in mb.values())
        seen.append(mb["row"].tolist())
        return outputs(mb)

    policy.model.outputs = recording
    stats = policy.learn_mode.forward(batch)
    assert stats["n_updates"] == 2 * 3
    assert [len(rows) for rows in seen] == [16, 16, 8] * 2
    for epoch in (seen[:3], seen[3:]):
        assert sorted(sum(epoch, [])) == list(range(n))
    assert sum(seen[:3], []) != sum(seen[3:], [])  # reshuffled each epoch


@pytest.mark.parametrize("action_space", [ACT2, BOX2])
def test_fixed_input_stage_is_computed_once_per_batch_and_learns_the_same_bits(action_space):
    """With the grid read flat and the direction one-hot (no weights before the MLPs), the
    update computes that input once for the whole batch and each minibatch takes its rows; the
    weights it ends with are those of the update that runs the whole network per minibatch."""
    space = gym.spaces.Dict({"image": gym.spaces.Box(0, 10, (7, 7, 3), np.uint8),
                             "direction": gym.spaces.Discrete(4)})
    cfg = {"model": {"encoders": {"image": "mlp"}},
           "learn": {"epoch_per_collect": 2, "batch_size": 16}}
    fast, plain = ppo(cfg, space, action_space), ppo(cfg, space, action_space)
    rng = np.random.default_rng(0)
    n = 40
    obs = {"image": rng.integers(0, 11, (n, 7, 7, 3), dtype=np.uint8),
           "direction": rng.integers(0, 4, n)}
    batch = {"obs": obs, **fast.collect_mode.forward(obs)}
    batch["adv"] = rng.normal(size=n).astype(np.float32)
    batch["return"] = (batch["value"] + batch["adv"]).astype(np.float32)
    computed = []
    fixed = fast.model.fixed_features

    def counting(o):
        computed.append(int(o["direction"].shape[0]))
        return fixed(o)

    fast.model.fixed_features = counting
    plain.model.fixed_features = lambda o: None  # every minibatch through outputs(obs)
    assert fast.learn_mode.forward(batch) == plain.learn_mode.forward(batch)
    assert computed == [n]
    for a, b in zip(fast.model.parameters(), plain.model.parameters()):
        assert torch.equal(a, b)


def test_head_outputs_of_fixed_features_are_the_outputs_and_need_a_fixed_input_stage():
    from rlpipe.models import ActorCritic

    space = gym.spaces.Dict({"image": gym.spaces.Box(0, 10, (7, 7, 3), np.uint8),
                             "direction": gym.spaces.Discrete(4)})
    obs = {"image": torch.randint(0, 11, (6, 7, 7, 3), dtype=torch.uint8),
           "direction": torch.randint(0, 4, (6,))}
    net = ActorCritic(space, ACT2, hidden=(8,), encoders={"image": "mlp"})
    logits, value = net.head_outputs(net.fixed_features(obs))
    expected = net.outputs(obs)
    assert torch.equal(logits, expected[0]) and torch.equal(value, expected[1])
    conv = ActorCritic(space, ACT2, hidden=(8,))
    assert conv.fixed_features(obs) is None
    with pytest.raises(ValueError, match="call outputs"):
        conv.head_outputs(torch.zeros(6, 8))
