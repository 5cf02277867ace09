"""SACPolicy: actions in bounds, soft TD target (terminated vs truncated), temperature tuning,
acting copy, state round trips, space errors and a one-step bandit it must solve."""
import gymnasium as gym
import numpy as np
import pytest
import torch

from rlpipe.policies import SACPolicy, UnsupportedSpaceError, get_policy
from rlpipe.data import to_torch

from .pinned_update import (check_against_frozen, frozen_batch, frozen_critic_grads,
                            frozen_critic_step)

OBS3 = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
ACT2 = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 5.0], np.float32))


def make(cfg=None, obs_space=OBS3, action_space=ACT2):
    base = {"seed": 0, "model": {"actor_hidden": (16, 16), "critic_hidden": (16, 16)},
            "learn": {"batch_size": 32}}
    for key, value in (cfg or {}).items():
        base[key] = {**base.get(key, {}), **value} if isinstance(value, dict) else value
    return SACPolicy(base, obs_space, action_space)


def transitions(n=32, obs_dim=3, space=ACT2, seed=0, terminated=None, truncated=None):
    rng = np.random.default_rng(seed)
    return {
        "obs": rng.normal(size=(n, obs_dim)).astype(np.float32),
        "action": rng.uniform(space.low, space.high, size=(n, space.shape[0])).astype(np.float32),
        "reward": rng.normal(size=n).astype(np.float32),
        "next_obs": rng.normal(size=(n, obs_dim)).astype(np.float32),
        "terminated": np.zeros(n, bool) if terminated is None else np.asarray(terminated, bool),
        "truncated": np.zeros(n, bool) if truncated is None else np.asarray(truncated, bool),
    }


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny networks: one thread is faster, and immune to a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@torch.no_grad()
def constant_critic(critic, value):
    """A hidden=() critic whose Q's ignore their input: Q1 = Q2 = value."""
    for net in critic.q_nets:
        net.net[0].weight.zero_()
        net.net[0].bias.fill_(value)


@torch.no_grad()
def set_actor(actor, mean_bias, log_std_bias):
    """Zero the actor's heads' weights: a state-independent Gaussian before the tanh."""
    actor.mean_head.weight.zero_()
    actor.mean_head.bias.fill_(mean_bias)
    actor.log_std_head.weight.zero_()
    actor.log_std_head.bias.fill_(log_std_bias)


def test_registry_defaults_and_stats_keys():
    assert get_policy("sac") is SACPolicy
    cfg = SACPolicy.default_config()
    assert cfg.learn.auto_alpha is True and cfg.learn.target_entropy is None
    assert make().target_entropy == -2.0
    assert make({"learn": {"target_entropy": -0.5}}).target_entropy == -0.5
    stats = make().learn_mode.forward(transitions())
    assert set(stats) == {"critic_loss", "q_mean", "target_mean", "actor_loss", "alpha_loss",
                          "entropy", "alpha"}
    assert all(isinstance(v, float) and np.isfinite(v) for v in stats.values())


def test_actions_are_float32_within_the_box_and_eval_is_deterministic():
    policy = make()
    obs = np.random.default_rng(1).normal(size=(500, 3)).astype(np.float32) * 10
    with torch.no_grad():  # push the Gaussian wide so that samples hit both bounds
        policy.acting.log_std_head.bias.fill_(5.0)
    action = policy.collect_mode.forward(obs)["action"]
    assert action.dtype == np.float32 and action.shape == (500, 2)
    assert (action >= ACT2.low).all() and (action <= ACT2.high).all()
    assert action[:, 1].min() < 0.05 and action[:, 1].max() > 4.95  # spans [0, 5]
    eval_a = policy.eval_mode.forward(obs)["action"]
    np.testing.assert_array_equal(eval_a, policy.eval_mode.forward(obs)["action"])
    with torch.no_grad():
        unit = torch.tanh(policy.actor(torch.as_tensor(obs))[0]).numpy()
    np.testing.assert_allclose(eval_a, ACT2.low + (unit + 1) / 2 * (ACT2.high - ACT2.low),
                               rtol=1e-5, atol=1e-5)
    assert policy.collect_mode.forward(obs.astype(np.float64))["action"].shape == (500, 2)


def test_log_prob_matches_the_change_of_variables():
    actor = make().actor
    set_actor(actor, 0.3, -1.0)
    obs = torch.zeros(2000, 3)
    with torch.no_grad():
        action, log_prob = actor.sample(obs, torch.Generator().manual_seed(0))
        mean, log_std = actor(obs[:1])
    u = torch.atanh(action.clamp(-0.999999, 0.999999).double())
    normal = torch.distributions.Normal(mean.double(), log_std.exp().double())
    expected = (normal.log_prob(u) - torch.log1p(-torch.tanh(u) ** 2)).sum(-1)
    np.testing.assert_allclose(log_prob.double().numpy(), expected.numpy(), atol=1e-3)


def test_td_target_bootstraps_through_truncation_but_not_termination():
    policy = make({"model": {"critic_hidden": ()}, "learn": {"init_alpha": 1e-8, "gamma": 0.9}})
    constant_critic(policy.critic_target, 10.0)
    batch = transitions(3, terminated=[False, False, True], truncated=[False, True, False])
    batch["reward"] = np.array([1.0, 2.0, 3.0], np.float32)
    y = policy._td_target(to_torch(batch), policy._normal(3)).numpy()
    np.testing.assert_allclose(y, [1.0 + 0.9 * 10, 2.0 + 0.9 * 10, 3.0], atol=1e-4)
    # an n-step batch brings its own discount
    batch["discount"] = np.array([0.5, 0.0, 0.25], np.float32)
    y = policy._td_target(to_torch(batch), policy._normal(3)).numpy()
    np.testing.assert_allclose(y, [1.0 + 5.0, 2.0, 3.0 + 2.5], atol=1e-4)


def test_td_target_subtracts_the_entropy_term():
    policy = make({"model": {"critic_hidden": ()}, "learn": {"init_alpha": 0.5, "gamma": 1.0}})
    constant_critic(policy.critic_target, 0.0)
    set_actor(policy.actor, 0.0, -1.0)
    batch = transitions(4096, terminated=np.zeros(4096))
    batch["reward"][:] = 0.0
    state = policy._learn_rng.get_state()
    y = policy._td_target(to_torch(batch), policy._normal(4096))
    policy._learn_rng.set_state(state)  # replay the same next-action noise
    _, next_logp = policy.actor.sample(torch.as_tensor(batch["next_obs"]), policy._learn_rng)
    torch.testing.assert_close(y, -0.5 * next_logp)


@pytest.mark.parametrize("log_std_bias, direction", [(0.0, -1), (-10.0, +1)])
def test_temperature_moves_toward_the_target_entropy(log_std_bias, direction):
    # log_std_bias 0 → std ≈ 0.22: entropy ≈ 0 per dim, above the target −2 → α shrinks;
    # -10 → std = e^-5: entropy ≈ -3.6 per dim, below the target → α grows.
    policy = make({"learn": {"actor_lr": 0.0, "alpha_lr": 0.01}})
    set_actor(policy.actor, 0.0, log_std_bias)
    alphas = [policy.alpha]
    for i in range(5):
        stats = policy.learn_mode.forward(transitions(seed=i))
        alphas.append(stats["alpha"])
    steps = np.sign(np.diff(alphas))
    assert (steps == direction).all(), alphas
    assert (stats["entropy"] > policy.target_entropy) == (direction < 0)


def test_fixed_temperature_and_delayed_actor_updates():
    policy = make({"learn": {"auto_alpha": False, "init_alpha": 0.2, "actor_update_freq": 2}})
    before = [p.clone() for p in policy.actor.parameters()]
    policy.learn_mode.forward(transitions(seed=0))  # train_iter 0: actor moves
    after_first = [p.clone() for p in policy.actor.parameters()]
    assert any(not torch.equal(a, b) for a, b in zip(before, after_first))
    policy.learn_mode.forward(transitions(seed=1))  # train_iter 1: actor waits
    assert all(torch.equal(a, b) for a, b in zip(after_first, policy.actor.parameters()))
    assert policy.alpha == pytest.approx(0.2) and policy.learn_mode.train_iter == 2


def test_target_critic_follows_by_polyak_averaging():
    policy = make({"learn": {"tau": 0.25}})
    old_target = [p.clone() for p in policy.critic_target.parameters()]
    policy.learn_mode.forward(transitions())
    for old, new, online in zip(old_target, policy.critic_target.parameters(),
                                policy.critic.parameters()):
        torch.testing.assert_close(new, 0.75 * old + 0.25 * online)


def test_acting_copy_changes_only_on_refresh():
    policy = make({"learn": {"actor_lr": 0.05}})
    obs = np.random.default_rng(2).normal(size=(16, 3)).astype(np.float32)
    first = policy.collect_mode.forward(obs, deterministic=True)["action"]
    for i in range(3):
        policy.learn_mode.forward(transitions(seed=i))
    np.testing.assert_array_equal(policy.collect_mode.forward(obs, deterministic=True)["action"],
                                  first)
    assert not np.array_equal(policy.eval_mode.forward(obs)["action"], first)
    policy.collect_mode.refresh()
    np.testing.assert_array_equal(policy.collect_mode.forward(obs, deterministic=True)["action"],
                                  policy.eval_mode.forward(obs)["action"])
    assert all(not p.requires_grad for p in policy.acting.parameters())
    assert all(not p.requires_grad for p in policy.critic_target.parameters())


def test_state_dict_round_trip_through_weights_only_load(tmp_path):
    a = make()
    for i in range(3):
        a.learn_mode.forward(transitions(seed=i))
    a.collect_mode.refresh()
    a.learn_mode.forward(transitions(seed=3))  # acting now differs from actor
    torch.save(a.state_dict(), tmp_path / "sac.pt")
    b = make({"seed": 7})
    b.load_state_dict(torch.load(tmp_path / "sac.pt", weights_only=True))
    assert b.learn_mode.train_iter == 4 and b.alpha == a.alpha
    obs = np.random.default_rng(3).normal(size=(8, 3)).astype(np.float32)
    np.testing.assert_array_equal(a.eval_mode.forward(obs)["action"],
                                  b.eval_mode.forward(obs)["action"])
    np.testing.assert_array_equal(a.collect_mode.forward(obs)["action"],  # same RNG state too
                                  b.collect_mode.forward(obs)["action"])
    assert a.learn_mode.forward(transitions(seed=9)) == b.learn_mode.forward(transitions(seed=9))
    for pa, pb in zip(a.critic_target.parameters(), b.critic_target.parameters()):
        assert torch.equal(pa, pb)
    with pytest.raises(KeyError, match="lacks.*'log_alpha'"):
        b.load_state_dict({k: v for k, v in a.state_dict().items() if k != "log_alpha"})


@pytest.mark.parametrize("space", [gym.spaces.Discrete(3), gym.spaces.MultiDiscrete([2, 2])])
def test_discrete_action_space_points_to_dqn_or_ppo(space):
    with pytest.raises(UnsupportedSpaceError) as info:
        make(action_space=space)
    msg = str(info.value)
    assert "SACPolicy" in msg and "Box" in msg and "DQN" in msg and "PPO" in msg


def test_unbounded_or_nested_box_actions_are_rejected():
    with pytest.raises(UnsupportedSpaceError, match="finite action bounds.*RescaleAction"):
        make(action_space=gym.spaces.Box(-np.inf, np.inf, (2,)))
    with pytest.raises(UnsupportedSpaceError, match="1-D Box"):
        make(action_space=gym.spaces.Box(-1, 1, (2, 2)))


def test_an_epsilon_from_a_dqn_pipeline_is_a_clear_error():
    with pytest.raises(TypeError, match=r"\['eps'\].*remove eps_greedy_handler"):
        make().collect_mode.forward(np.zeros((2, 3), np.float32), eps=0.1)


def test_bad_batches_and_config_are_clear_errors():
    policy = make()
    batch = transitions()
    del batch["terminated"]
    with pytest.raises(KeyError, match="terminated"):
        policy.learn_mode.forward(batch)
    batch = transitions()
    batch["action"] = batch["action"][:, :1]
    with pytest.raises(ValueError, match=r"\[B, 2\]"):
        policy.learn_mode.forward(batch)
    with pytest.raises(ValueError, match="tau"):
        make({"learn": {"tau": 0.0}})
    with pytest.raises(ValueError, match="init_alpha"):
        make({"learn": {"init_alpha": 0.0}})


def test_solves_a_one_step_bandit():
    # reward −(a − 0.6)² on one-step episodes: the mean action must go to 0.6
    space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    policy = make({"model": {"critic_hidden": (64, 64)},
                   "learn": {"actor_lr": 1e-3, "critic_lr": 3e-3, "alpha_lr": 3e-3,
                             "init_alpha": 0.01}}, space, space)
    rng = np.random.default_rng(0)
    obs = np.zeros((64, 1), np.float32)
    for _ in range(200):
        action = rng.uniform(-1, 1, size=(64, 1)).astype(np.float32)
        policy.learn_mode.forward({"obs": obs, "action": action,
                                   "reward": -(action[:, 0] - 0.6) ** 2, "next_obs": obs,
                                   "terminated": np.ones(64, bool)})
    assert policy.eval_mode.forward(obs[:1])["action"][0, 0] == pytest.approx(0.6, abs=0.1)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_learner_on_gpu_acts_on_a_cpu_copy():
    policy = make({"device": "cuda"})
    assert next(policy.actor.parameters()).is_cuda and not next(policy.acting.parameters()).is_cuda
    assert np.isfinite(policy.learn_mode.forward(transitions())["critic_loss"])
    policy.collect_mode.refresh()
    obs = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)
    np.testing.assert_allclose(policy.collect_mode.forward(obs, deterministic=True)["action"],
                               policy.eval_mode.forward(obs)["action"], atol=1e-5)
    other = make({"device": "cuda", "seed": 3})
    other.load_state_dict(policy.state_dict())
    batch = transitions(seed=5)
    assert other.learn_mode.forward(batch) == policy.learn_mode.forward(batch)


# --- the update, pinned bit for bit ---------------------------------------------------------------
# A frozen copy of SACPolicy's learn step as it was before the twin-critic machinery moved to
# rlpipe/policies/_twin_critic.py (main 5ba5bea). It works on a second, identically seeded policy
# through public attributes only, with its own learn RNG (the same stream as the policy's).

def frozen_sac_step(p, rng, batch):
    c = p.cfg.learn
    b, action, discount = frozen_batch(p, batch)
    with torch.no_grad():
        next_action, next_logp = p.actor.sample(b["next_obs"], rng)
        next_q = torch.min(*p.critic_target(b["next_obs"], next_action))
        y = b["reward"].float() + discount * (next_q - p.log_alpha.exp() * next_logp)
    stats = frozen_critic_step(p, b, action, y)
    if p.train_iter % c.actor_update_freq == 0:
        new_action, logp = p.actor.sample(b["obs"], rng)
        alpha = p.log_alpha.detach().exp()
        frozen_critic_grads(p, False)
        q_new = torch.min(*p.critic(b["obs"], new_action))
        frozen_critic_grads(p, True)
        actor_loss = (alpha * logp - q_new).mean()
        p.actor_optimizer.zero_grad(set_to_none=True)
        actor_loss.backward()
        if c.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(list(p.actor.parameters()), c.grad_clip)
        if c.auto_alpha:
            alpha_loss = -(p.log_alpha * (logp.detach() + p.target_entropy)).mean()
            p.alpha_optimizer.zero_grad(set_to_none=True)
            alpha_loss.backward()
        p.actor_optimizer.step()
        if c.auto_alpha:
            p.alpha_optimizer.step()
    with torch.no_grad():
        torch._foreach_lerp_(list(p.critic_target.parameters()), list(p.critic.parameters()),
                             c.tau)
    p.train_iter += 1
    return stats


@pytest.mark.parametrize("learn", [
    {"actor_update_freq": 2, "grad_clip": 0.5, "tau": 0.1},
    {"auto_alpha": False, "init_alpha": 0.3, "gamma": 0.9},
])
def test_learn_steps_match_the_frozen_update_bit_for_bit(learn):
    policy, reference = make({"learn": learn}), make({"learn": learn})
    check_against_frozen(policy, reference, frozen_sac_step, transitions,
                         networks=("actor", "critic", "critic_target"),
                         optimizers=("actor_optimizer", "critic_optimizer", "alpha_optimizer"))
    assert torch.equal(policy.log_alpha, reference.log_alpha)
