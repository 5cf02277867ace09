"""DQN learn-step math on a linear Q network with hand-set weights: Q(s) = W s (+ b)."""
import numpy as np
import pytest
import torch

from tests.policies.policy_test_helpers import batch, linear_dqn, set_linear

S0, S1 = [1.0, 0.0], [0.0, 1.0]  # one-hot states
# Online: Q(s0) = [0, 0], Q(s1) = [1, 2]  → online argmax at s1 is action 1.
W_ONLINE = [[0.0, 1.0], [0.0, 2.0]]
# Target: Q(s1) = [5, 3]  → target's own max is 5, its value of the online choice is 3.
W_TARGET = [[0.0, 5.0], [0.0, 3.0]]


def make(**learn):
    policy = linear_dqn({"learn": {"gamma": 0.9, "lr": 0.0, "huber": False, **learn}})
    set_linear(policy.online, W_ONLINE)
    set_linear(policy.target, W_TARGET)
    return policy


def targets(policy, b):
    """With Q_online(s0, ·) = 0 the priority |Q - y| of a row is its target |y|."""
    b = dict(b, weight=np.ones(len(b["reward"]), np.float32))
    return policy.learn_mode.forward(b)["priority"]


def test_terminated_truncated_and_ongoing_targets_double_q():
    b = batch(obs=[S0] * 3, action=[0, 1, 0], reward=[1.0, 1.0, 1.0], next_obs=[S1] * 3,
              terminated=[False, True, False], truncated=[False, False, True])
    # ongoing: 1 + 0.9 * Q_target(s1, argmax Q_online(s1)) = 1 + 0.9 * 3
    # terminated: no bootstrap; truncated: bootstraps like an ongoing step
    np.testing.assert_allclose(targets(make(), b), [1 + 0.9 * 3, 1.0, 1 + 0.9 * 3], rtol=1e-6)


def test_vanilla_target_uses_target_max():
    b = batch(obs=[S0] * 2, action=[0, 0], reward=[1.0, 0.5], next_obs=[S1] * 2,
              terminated=[False, True])
    np.testing.assert_allclose(targets(make(double_q=False), b), [1 + 0.9 * 5, 0.5], rtol=1e-6)


def test_nstep_discount_from_batch_overrides_gamma_and_terminated():
    b = batch(obs=[S0] * 3, action=[0, 0, 0], reward=[2.0, 2.0, 2.0], next_obs=[S1] * 3,
              terminated=[False, True, False], discount=np.float32([0.9 ** 3, 0.0, 0.5]))
    np.testing.assert_allclose(targets(make(nstep=3), b), [2 + 0.729 * 3, 2.0, 2 + 0.5 * 3],
                               rtol=1e-6)


def test_nstep_without_discount_is_an_error():
    b = batch(obs=[S0], action=[0], reward=[1.0], next_obs=[S1])
    with pytest.raises(KeyError, match="nstep=3.*'discount'"):
        make(nstep=3).learn_mode.forward(b)


def test_loss_values_huber_mse_and_weights():
    # one row: q = 0, y = 1 + 0.9 * 3 = 3.7
    b = batch(obs=[S0], action=[0], reward=[1.0], next_obs=[S1])
    out = make(huber=False).learn_mode.forward(b)
    assert out["loss"] == pytest.approx(3.7 ** 2, rel=1e-5)
    assert out["q_mean"] == pytest.approx(0.0) and out["target_mean"] == pytest.approx(3.7)
    assert out["td_abs_mean"] == pytest.approx(3.7, rel=1e-6)
    assert "priority" not in out  # only with PER weights
    assert make(huber=True).learn_mode.forward(b)["loss"] == pytest.approx(3.7 - 0.5, rel=1e-5)
    # weights scale each row's loss; the mean is over rows
    b2 = batch(obs=[S0, S0], action=[0, 0], reward=[1.0, 0.0], next_obs=[S1, S1],
               terminated=[False, True], weight=np.float32([0.5, 0.0]))
    out = make(huber=False).learn_mode.forward(b2)
    assert out["loss"] == pytest.approx(0.5 * 3.7 ** 2 / 2, rel=1e-5)
    assert out["priority"].shape == (2,) and out["priority"].dtype == np.float32


def test_action_offset_discrete_start():
    import gymnasium as gym
    from tests.policies.policy_test_helpers import VEC2
    policy = linear_dqn({"learn": {"gamma": 0.9, "lr": 0.0, "huber": False}}, VEC2,
                        gym.spaces.Discrete(2, start=-1))
    set_linear(policy.online, [[0.0, 1.0], [7.0, 2.0]])  # Q(s0) = [0, 7]
    set_linear(policy.target, W_TARGET)
    # action -1 is index 0 (Q = 0), action 0 is index 1 (Q = 7)
    b = batch(obs=[S0, S0], action=[-1, 0], reward=[0.0, 0.0], next_obs=[S1, S1],
              terminated=[True, True], weight=np.ones(2, np.float32))
    np.testing.assert_allclose(policy.learn_mode.forward(b)["priority"], [0.0, 7.0])
    policy.collect_mode.refresh()
    assert policy.collect_mode.forward(np.float32([S0]))["action"].tolist() == [0]
    assert policy.eval_mode.forward(np.float32([S1]))["action"].tolist() == [0]  # Q(s1)=[1,2]


def test_hard_target_update_every_n_steps():
    policy = linear_dqn({"learn": {"lr": 0.1, "target_update_freq": 3}})
    before = policy.target.head.weight.detach().clone()
    b = batch(obs=[S0, S1], action=[0, 1], reward=[1.0, -1.0], next_obs=[S1, S0])
    for step in (1, 2):
        policy.learn_mode.forward(b)
        assert policy.learn_mode.train_iter == step
        assert torch.equal(policy.target.head.weight, before)
        assert not torch.equal(policy.online.head.weight, before)
    policy.learn_mode.forward(b)
    assert torch.equal(policy.target.head.weight, policy.online.head.weight)
    assert torch.equal(policy.target.head.bias, policy.online.head.bias)


def test_polyak_target_update_every_step():
    policy = linear_dqn({"learn": {"lr": 0.1, "tau": 0.25}})
    b = batch(obs=[S0, S1], action=[0, 1], reward=[1.0, -1.0], next_obs=[S1, S0])
    for _ in range(3):
        before = policy.target.head.weight.detach().clone()
        policy.learn_mode.forward(b)
        online = policy.online.head.weight.detach()
        torch.testing.assert_close(policy.target.head.weight, 0.75 * before + 0.25 * online)


def test_bad_tau_and_freq_are_errors():
    with pytest.raises(ValueError, match="tau"):
        linear_dqn({"learn": {"tau": 1.5}})
    with pytest.raises(ValueError, match="target_update_freq"):
        linear_dqn({"learn": {"target_update_freq": 0}})


def grads_norm(net):
    return torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in net.parameters()])).item()


def test_grad_clipping_caps_the_applied_gradient():
    b = batch(obs=[S0] * 4, action=[0, 1, 0, 1], reward=[100.0, -100.0, 50.0, 80.0],
              next_obs=[S1] * 4, terminated=[True] * 4)
    policy = make(grad_clip=0.01)
    out = policy.learn_mode.forward(b)
    assert out["grad_norm"] > 1.0  # reported before clipping
    assert grads_norm(policy.online) == pytest.approx(0.01, rel=1e-4)
    policy = make(grad_clip=None)
    out = policy.learn_mode.forward(b)
    assert grads_norm(policy.online) == pytest.approx(out["grad_norm"], rel=1e-5)


def test_learns_a_two_state_chain():
    """s0 --a1--> s1 (r=0), s0 --a0--> end (r=0); s1 --a0--> end (r=1), s1 --a1--> end (r=0).
    With gamma 0.9: Q*(s0) = [0, 0.9], Q*(s1) = [1, 0]."""
    policy = linear_dqn({"learn": {"lr": 0.05, "gamma": 0.9, "target_update_freq": 20,
                                   "huber": False}})
    b = batch(obs=[S0, S0, S1, S1], action=[0, 1, 0, 1], reward=[0.0, 0.0, 1.0, 0.0],
              next_obs=[S0, S1, S0, S0], terminated=[True, False, True, True])
    for _ in range(600):
        stats = policy.learn_mode.forward(b)
    with torch.no_grad():
        q = policy.online(torch.tensor([S0, S1])).numpy()
    np.testing.assert_allclose(q, [[0.0, 0.9], [1.0, 0.0]], atol=0.02)
    assert stats["loss"] < 1e-3
    assert policy.eval_mode.forward(np.float32([S0, S1]))["action"].tolist() == [1, 0]
