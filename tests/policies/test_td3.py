"""TD3Policy: exploration noise, target smoothing (clipped), clipped double-Q target with
terminated vs truncated, delayed actor/target updates, acting copy, state round trips, space
errors and a one-step bandit it must solve."""
import gymnasium as gym
import numpy as np
import pytest
import torch

from rlpipe.data import to_torch
from rlpipe.policies import TD3Policy, UnsupportedSpaceError, get_policy

from .pinned_update import (check_against_frozen, frozen_batch, frozen_critic_grads,
                            frozen_critic_step, frozen_gradient_step)

OBS3 = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
ACT2 = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 5.0], np.float32))


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny networks: one thread is faster, and immune to a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def make(cfg=None, obs_space=OBS3, action_space=ACT2):
    base = {"seed": 0, "model": {"actor_hidden": (16, 16), "critic_hidden": (16, 16)},
            "learn": {"batch_size": 32}}
    for key, value in (cfg or {}).items():
        base[key] = {**base.get(key, {}), **value} if isinstance(value, dict) else value
    return TD3Policy(base, obs_space, action_space)


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


@torch.no_grad()
def constant_actor(actor, pre_tanh):
    """μ(s) = tanh(pre_tanh) for every state."""
    actor.head.weight.zero_()
    actor.head.bias.fill_(pre_tanh)


def snapshot(module):
    return [p.detach().clone() for p in module.parameters()]


def changed(before, module):
    return any(not torch.equal(a, b) for a, b in zip(before, module.parameters()))


def test_registry_defaults_and_stats_keys():
    assert get_policy("td3") is TD3Policy
    cfg = TD3Policy.default_config()
    assert cfg.learn.policy_delay == 2 and cfg.learn.target_noise == 0.2
    assert cfg.learn.target_noise_clip == 0.5 and cfg.collect.noise_scale == 0.1
    stats = make().learn_mode.forward(transitions())
    assert set(stats) == {"critic_loss", "q_mean", "target_mean", "actor_loss"}
    assert all(isinstance(v, float) and np.isfinite(v) for v in stats.values())


def test_exploration_noise_scale_and_bounds():
    policy = make({"collect": {"noise_scale": 0.2}})
    constant_actor(policy.acting, 0.0)  # μ = the middle of the box: (0, 2.5)
    obs = np.zeros((20_000, 3), np.float32)
    action = policy.collect_mode.forward(obs)["action"]
    assert action.dtype == np.float32 and action.shape == (20_000, 2)
    half_range = (ACT2.high - ACT2.low) / 2
    np.testing.assert_allclose(action.mean(0), [0.0, 2.5], atol=0.02)
    np.testing.assert_allclose(action.std(0), 0.2 * half_range, rtol=0.03)
    # override per call; 0 gives μ itself, which eval gives too once refreshed
    np.testing.assert_array_equal(policy.collect_mode.forward(obs[:4], noise_scale=0.0)["action"],
                                  np.tile([0.0, 2.5], (4, 1)).astype(np.float32))
    wide = policy.collect_mode.forward(obs, noise_scale=3.0)["action"]
    assert (wide >= ACT2.low).all() and (wide <= ACT2.high).all()
    assert (wide == ACT2.low).any() and (wide == ACT2.high).any()  # clipped at both bounds


def test_target_policy_smoothing_noise_is_clipped():
    policy = make({"learn": {"target_noise": 10.0, "target_noise_clip": 0.3}})
    constant_actor(policy.actor_target, 0.0)
    smoothed = policy._target_action(torch.zeros(5000, 3), policy._smoothing_noise(5000))
    assert smoothed.abs().max() <= 0.3 + 1e-6
    assert (smoothed.abs() > 0.3 - 1e-6).float().mean() > 0.9  # almost all noise hit the clip
    constant_actor(policy.actor_target, 5.0)  # μ ≈ 1: the sum is clipped to the box
    smoothed = policy._target_action(torch.zeros(5000, 3), policy._smoothing_noise(5000))
    assert smoothed.max() <= 1.0 and smoothed.min() >= 1.0 - 0.3 - 1e-4
    policy = make({"learn": {"target_noise": 0.0}})
    constant_actor(policy.actor_target, 0.5)
    torch.testing.assert_close(policy._target_action(torch.zeros(4, 3),
                                                     policy._smoothing_noise(4)),
                               torch.full((4, 2), float(np.tanh(0.5))))


def test_td_target_bootstraps_through_truncation_but_not_termination():
    policy = make({"model": {"critic_hidden": ()}, "learn": {"gamma": 0.9}})
    with torch.no_grad():
        for net in policy.critic_target.q_nets:  # Q1' = 10 and Q2' = 7 everywhere: min is 7
            net.net[0].weight.zero_()
        policy.critic_target.q_nets[0].net[0].bias.fill_(10.0)
        policy.critic_target.q_nets[1].net[0].bias.fill_(7.0)
    batch = transitions(3, terminated=[False, False, True], truncated=[False, True, False])
    batch["reward"] = np.array([1.0, 2.0, 3.0], np.float32)
    y = policy._td_target(to_torch(batch), policy._smoothing_noise(3)).numpy()
    np.testing.assert_allclose(y, [1.0 + 0.9 * 7, 2.0 + 0.9 * 7, 3.0], atol=1e-5)
    batch["discount"] = np.array([0.5, 0.0, 1.0], np.float32)
    y = policy._td_target(to_torch(batch), policy._smoothing_noise(3)).numpy()
    np.testing.assert_allclose(y, [4.5, 2.0, 10.0], atol=1e-5)


def test_actor_and_targets_update_every_policy_delay_steps():
    policy = make({"learn": {"policy_delay": 3, "tau": 0.5}})
    updated_at = []
    for step in range(1, 8):
        actor, actor_t, critic_t = (snapshot(policy.actor), snapshot(policy.actor_target),
                                    snapshot(policy.critic_target))
        critic = snapshot(policy.critic)
        policy.learn_mode.forward(transitions(seed=step))
        assert changed(critic, policy.critic)  # the critics learn every step
        moved = [changed(actor, policy.actor), changed(actor_t, policy.actor_target),
                 changed(critic_t, policy.critic_target)]
        assert len(set(moved)) == 1, (step, moved)  # actor and both targets move together
        if moved[0]:
            updated_at.append(step)
    assert updated_at == [3, 6] and policy.actor_updates == 2
    assert policy.learn_mode.train_iter == 7


def test_targets_follow_by_polyak_averaging():
    policy = make({"learn": {"policy_delay": 1, "tau": 0.25}})
    old = snapshot(policy.actor_target) + snapshot(policy.critic_target)
    policy.learn_mode.forward(transitions())
    new = list(policy.actor_target.parameters()) + list(policy.critic_target.parameters())
    online = list(policy.actor.parameters()) + list(policy.critic.parameters())
    for o, n, s in zip(old, new, online):
        torch.testing.assert_close(n, 0.75 * o + 0.25 * s)


def test_acting_copy_changes_only_on_refresh():
    policy = make({"learn": {"actor_lr": 0.05, "policy_delay": 1}})
    obs = np.random.default_rng(2).normal(size=(16, 3)).astype(np.float32)
    first = policy.collect_mode.forward(obs, noise_scale=0.0)["action"]
    for i in range(3):
        policy.learn_mode.forward(transitions(seed=i))
    np.testing.assert_array_equal(policy.collect_mode.forward(obs, noise_scale=0.0)["action"],
                                  first)
    assert not np.array_equal(policy.eval_mode.forward(obs)["action"], first)
    policy.collect_mode.refresh()
    np.testing.assert_array_equal(policy.collect_mode.forward(obs, noise_scale=0.0)["action"],
                                  policy.eval_mode.forward(obs)["action"])
    for net in (policy.acting, policy.actor_target, policy.critic_target):
        assert all(not p.requires_grad for p in net.parameters())


def test_state_dict_round_trip_through_weights_only_load(tmp_path):
    a = make()
    for i in range(3):
        a.learn_mode.forward(transitions(seed=i))
    a.collect_mode.refresh()
    a.learn_mode.forward(transitions(seed=3))
    torch.save(a.state_dict(), tmp_path / "td3.pt")
    b = make({"seed": 7})
    b.load_state_dict(torch.load(tmp_path / "td3.pt", weights_only=True))
    assert b.learn_mode.train_iter == 4 and b.actor_updates == a.actor_updates == 2
    obs = np.random.default_rng(3).normal(size=(8, 3)).astype(np.float32)
    np.testing.assert_array_equal(a.eval_mode.forward(obs)["action"],
                                  b.eval_mode.forward(obs)["action"])
    np.testing.assert_array_equal(a.collect_mode.forward(obs)["action"],  # same RNG state too
                                  b.collect_mode.forward(obs)["action"])
    for i in (9, 10):  # one step without and one with an actor update
        batch = transitions(seed=i)
        assert a.learn_mode.forward(batch) == b.learn_mode.forward(batch)
    for pa, pb in zip(a.actor_target.parameters(), b.actor_target.parameters()):
        assert torch.equal(pa, pb)
    with pytest.raises(KeyError, match="lacks.*'actor_target'"):
        b.load_state_dict({k: v for k, v in a.state_dict().items() if k != "actor_target"})


@pytest.mark.parametrize("space", [gym.spaces.Discrete(3), gym.spaces.MultiBinary(2)])
def test_discrete_action_space_points_to_dqn_or_ppo(space):
    with pytest.raises(UnsupportedSpaceError) as info:
        make(action_space=space)
    msg = str(info.value)
    assert "TD3Policy" in msg and "Box" in msg and "DQN" in msg and "PPO" in msg


def test_an_epsilon_from_a_dqn_pipeline_is_a_clear_error():
    with pytest.raises(TypeError, match=r"\['eps'\].*remove eps_greedy_handler"):
        make().collect_mode.forward(np.zeros((2, 3), np.float32), eps=0.1)


def test_bad_config_and_spaces_are_clear_errors():
    with pytest.raises(ValueError, match="policy_delay"):
        make({"learn": {"policy_delay": 0}})
    with pytest.raises(ValueError, match="noise_scale"):
        make({"collect": {"noise_scale": -0.1}})
    with pytest.raises(UnsupportedSpaceError, match="finite action bounds"):
        make(action_space=gym.spaces.Box(-np.inf, np.inf, (2,)))


def test_solves_a_one_step_bandit():
    # reward −(a − 0.6)² on one-step episodes: μ must go to 0.6
    space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    policy = make({"model": {"critic_hidden": (64, 64)},
                   "learn": {"actor_lr": 3e-3, "critic_lr": 3e-3}}, space, space)
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
    for i in range(2):
        assert np.isfinite(policy.learn_mode.forward(transitions(seed=i))["critic_loss"])
    policy.collect_mode.refresh()
    obs = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)
    np.testing.assert_allclose(policy.collect_mode.forward(obs, noise_scale=0.0)["action"],
                               policy.eval_mode.forward(obs)["action"], atol=1e-5)
    other = make({"device": "cuda", "seed": 3})
    other.load_state_dict(policy.state_dict())
    batch = transitions(seed=5)
    assert other.learn_mode.forward(batch) == policy.learn_mode.forward(batch)


# --- the update, pinned bit for bit ---------------------------------------------------------------
# A frozen copy of TD3Policy's learn step as it was before the twin-critic machinery moved to
# rlpipe/policies/_twin_critic.py (main 5ba5bea). It works on a second, identically seeded policy
# through public attributes only, with its own learn RNG (the same stream as the policy's).

def frozen_td3_step(p, rng, batch):
    c = p.cfg.learn
    b, action, discount = frozen_batch(p, batch)
    with torch.no_grad():
        target_action = p.actor_target(b["next_obs"])
        noise = torch.randn(target_action.shape, generator=rng, dtype=target_action.dtype)
        noise = (noise * c.target_noise).clamp(-c.target_noise_clip, c.target_noise_clip)
        target_action = (target_action + noise).clamp(-1.0, 1.0)
        y = b["reward"].float() + discount * torch.min(*p.critic_target(b["next_obs"],
                                                                        target_action))
    stats = frozen_critic_step(p, b, action, y)
    p.train_iter += 1
    if p.train_iter % c.policy_delay == 0:
        frozen_critic_grads(p, False)
        actor_loss = -p.critic.q1(b["obs"], p.actor(b["obs"])).mean()
        frozen_critic_grads(p, True)
        actor_params = list(p.actor.parameters())
        frozen_gradient_step(p.actor_optimizer, actor_loss, actor_params, c.grad_clip)
        with torch.no_grad():
            torch._foreach_lerp_(list(p.actor_target.parameters())
                                 + list(p.critic_target.parameters()),
                                 actor_params + list(p.critic.parameters()), c.tau)
    return stats


@pytest.mark.parametrize("learn", [
    {"policy_delay": 2, "grad_clip": 0.5, "tau": 0.1},
    {"policy_delay": 1, "target_noise": 0.3, "target_noise_clip": 0.2, "gamma": 0.9},
])
def test_learn_steps_match_the_frozen_update_bit_for_bit(learn):
    policy, reference = make({"learn": learn}), make({"learn": learn})
    check_against_frozen(policy, reference, frozen_td3_step, transitions,
                         networks=("actor", "actor_target", "critic", "critic_target"),
                         optimizers=("actor_optimizer", "critic_optimizer"))
