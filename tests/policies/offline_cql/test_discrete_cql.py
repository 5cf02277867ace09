"""Discrete CQL: DQN's loss plus α · (logsumexp_a Q(s, a) − Q(s, a_data)), checked by hand on a
linear Q network; masks; state round trip; the config guard."""
import copy
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlpipe.policies import DiscreteCQLPolicy, DQNPolicy, get_policy
from rlpipe.policies.discrete_cql import conservative_gap
from tests.policies.pinned_update import assert_same_tensors
from tests.policies.policy_test_helpers import VEC2, batch, random_batch, set_linear

ACT3 = gym.spaces.Discrete(3)
W = [[1.0, 0.0], [0.0, 2.0], [-1.0, 1.0]]  # Q(s) = W s + b, three actions
B = [0.0, 0.5, -0.5]


def linear(cls, cfg=None):
    learn = {"cql_alpha": 0.7} if cls is DiscreteCQLPolicy else {}
    learn.update((cfg or {}).get("learn", {}))
    policy = cls({"seed": 0, "model": {"hidden": ()}, "learn": learn}, VEC2, ACT3)
    set_linear(policy.online, W, B)
    set_linear(policy.target, W, B)
    return policy


def hand_gap(obs, action, mask=None):
    q = np.asarray(obs, np.float64) @ np.asarray(W).T + np.asarray(B)
    rows = []
    for i, a in enumerate(action):
        valid = q[i] if mask is None else q[i][np.asarray(mask[i], bool)]
        rows.append(math.log(sum(math.exp(v) for v in valid)) - q[i, a])
    return float(np.mean(rows))


OBS = [[0.2, 0.4], [1.0, 0.0], [0.5, 0.9]]
ACTION = [0, 2, 1]


def test_the_conservative_term_matches_a_hand_computed_value():
    data = batch(OBS, ACTION, [1.0, 0.0, -1.0], [[0.1, 0.1], [0.0, 1.0], [0.3, 0.3]],
                 terminated=[False, True, False])
    cql, dqn = linear(DiscreteCQLPolicy), linear(DQNPolicy)
    out, plain = cql.learn_mode.forward(data), dqn.learn_mode.forward(data)
    gap = hand_gap(OBS, ACTION)
    assert out["cql_gap"] == pytest.approx(gap, rel=1e-6)
    # the TD part is DQN's own: the losses differ by α · gap exactly
    assert out["loss"] - plain["loss"] == pytest.approx(0.7 * gap, rel=1e-5)
    assert out["q_mean"] == plain["q_mean"] and out["target_mean"] == plain["target_mean"]


def test_alpha_zero_is_plain_dqn():
    data = random_batch(n=16, obs_dim=2, n_actions=3, seed=3)
    cql, dqn = linear(DiscreteCQLPolicy, {"learn": {"cql_alpha": 0.0}}), linear(DQNPolicy)
    for _ in range(3):
        out, plain = cql.learn_mode.forward(data), dqn.learn_mode.forward(data)
        assert out["loss"] == plain["loss"]
    assert_same_tensors(cql.online.state_dict(), dqn.online.state_dict())


def test_the_masked_logsumexp_ignores_invalid_actions():
    mask = [[True, False, True], [True, True, False], [False, True, True]]
    data = batch(OBS, ACTION, [0.0] * 3, OBS, action_mask=np.asarray(mask))
    out = linear(DiscreteCQLPolicy).learn_mode.forward(data)
    assert out["cql_gap"] == pytest.approx(hand_gap(OBS, ACTION, mask), rel=1e-6)
    assert out["cql_gap"] != pytest.approx(hand_gap(OBS, ACTION), rel=1e-3)
    # an invalid action's Q, however large, changes nothing
    q = torch.tensor([[1.0, 1e4, 2.0]])
    gap = conservative_gap(q, torch.tensor([1.0]), torch.tensor([[True, False, True]]))
    assert gap.item() == pytest.approx(math.log(math.e + math.e ** 2) - 1.0, rel=1e-6)


def test_the_conservative_term_lowers_unseen_actions_and_raises_the_data_action():
    data = batch(OBS, [1, 1, 1], [0.0] * 3, OBS, terminated=[True] * 3)
    policy = linear(DiscreteCQLPolicy, {"learn": {"cql_alpha": 10.0, "lr": 1e-2}})
    obs = torch.as_tensor(np.asarray(OBS, np.float32))
    before = policy.online(obs).detach()
    for _ in range(20):
        policy.learn_mode.forward(data)
    after = policy.online(obs).detach()
    gap_before = (before[:, [0, 2]].max(1).values - before[:, 1]).mean()
    gap_after = (after[:, [0, 2]].max(1).values - after[:, 1]).mean()
    assert gap_after < gap_before - 0.5


def test_a_state_round_trip_gives_identical_next_updates():
    first = DiscreteCQLPolicy({"seed": 0, "model": {"hidden": (8,)}}, VEC2, ACT3)
    for i in range(3):
        first.learn_mode.forward(random_batch(32, 2, 3, seed=i))
    second = DiscreteCQLPolicy({"seed": 5, "model": {"hidden": (8,)}}, VEC2, ACT3)
    second.load_state_dict(copy.deepcopy(first.state_dict()))
    for i in (3, 4):
        data = random_batch(32, 2, 3, seed=i)
        assert first.learn_mode.forward(data) == second.learn_mode.forward(data)
    assert_same_tensors(first.state_dict(), second.state_dict())


def test_registered_offline_with_dqn_faces_and_a_guarded_alpha():
    assert get_policy("discrete-cql") is DiscreteCQLPolicy
    assert DiscreteCQLPolicy.pipeline == "offline" and DiscreteCQLPolicy.explores_with_eps
    policy = linear(DiscreteCQLPolicy)
    obs = np.asarray(OBS, np.float32)
    assert policy.eval_mode.forward(obs)["action"].tolist() == [1, 0, 1]
    assert policy.collect_mode.forward(obs, eps=1.0)["action"].shape == (3,)
    with pytest.raises(ValueError, match="policy.learn.cql_alpha must be a number >= 0"):
        DiscreteCQLPolicy({"learn": {"cql_alpha": -1.0}}, VEC2, ACT3)
