"""DQN and PPO with action masks: hand-computed targets, log-probabilities and entropy; acting
and evaluation pick valid actions only."""
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlpipe.envs import EnvManager
from rlpipe.middleware.evaluator import evaluate_episodes
from rlpipe.policies import DQNPolicy, PPOPolicy
from rlpipe.policies._masks import masked_categorical
from tests.policies.policy_test_helpers import batch, linear_dqn, set_linear

S0, S1 = [1.0, 0.0], [0.0, 1.0]
W_ONLINE = [[0.0, 1.0], [0.0, 2.0]]   # Q_online(s1) = [1, 2]
W_TARGET = [[0.0, 5.0], [0.0, 3.0]]   # Q_target(s1) = [5, 3]


def dqn(**learn):
    policy = linear_dqn({"learn": {"gamma": 0.9, "lr": 0.0, "huber": False, **learn}})
    set_linear(policy.online, W_ONLINE)
    set_linear(policy.target, W_TARGET)
    return policy


def targets(policy, next_mask):
    b = batch(obs=[S0] * 2, action=[0, 0], reward=[1.0, 1.0], next_obs=[S1] * 2,
              terminated=[False, False], weight=np.ones(2, np.float32),
              next_action_mask=np.array(next_mask, dtype=bool))
    return policy.learn_mode.forward(b)["priority"]  # |Q(s0)=0 − y| = y


def test_double_q_target_chooses_among_the_next_states_valid_actions():
    # unmasked the online argmax at s1 is action 1 (value 3); with action 1 invalid it is 0 → 5
    np.testing.assert_allclose(targets(dqn(), [[True, False], [True, True]]),
                               [1 + 0.9 * 5, 1 + 0.9 * 3], rtol=1e-6)


def test_vanilla_target_maximises_over_the_valid_actions():
    # unmasked max_a Q_target(s1) = 5 (action 0); with action 0 invalid it is 3
    np.testing.assert_allclose(targets(dqn(double_q=False), [[False, True], [True, True]]),
                               [1 + 0.9 * 3, 1 + 0.9 * 5], rtol=1e-6)


def test_dqn_acts_and_evaluates_over_valid_actions_only():
    policy = dqn()
    obs = np.array([S1] * 64, np.float32)
    mask = np.zeros((64, 2), bool)
    mask[:, 0] = True  # greedy would pick 1
    assert (policy.eval_mode.forward(obs)["action"] == 1).all()
    assert (policy.eval_mode.forward(obs, action_mask=mask)["action"] == 0).all()
    for eps in (0.0, 0.5, 1.0):
        assert (policy.collect_mode.forward(obs, eps=eps, action_mask=mask)["action"] == 0).all()
    with pytest.raises(ValueError, match=r"shape \[batch, n_actions\]"):
        policy.eval_mode.forward(obs, action_mask=mask[:, :1])


def hand_masked(logits, mask, action):
    """log π(action) and entropy of softmax over the valid logits, by hand."""
    valid = [l for l, m in zip(logits, mask) if m]
    log_z = math.log(sum(math.exp(l) for l in valid))
    probs = [math.exp(l - log_z) for l in valid]
    return logits[action] - log_z, -sum(p * math.log(p) for p in probs)


def test_masked_categorical_log_prob_and_entropy_by_hand():
    logits = [1.0, 2.0, 3.0, -0.5]
    mask = [True, False, True, True]
    dist = torch.distributions.Categorical(logits=torch.tensor([logits]))
    masked = masked_categorical(dist, torch.tensor([mask]))
    logp, entropy = hand_masked(logits, mask, 2)
    assert masked.log_prob(torch.tensor([2])).item() == pytest.approx(logp, rel=1e-6)
    assert masked.entropy().item() == pytest.approx(entropy, rel=1e-6)
    assert masked.probs[0, 1].item() == 0.0
    # one valid action: log π = 0 and entropy 0, no NaN
    only = masked_categorical(dist, torch.tensor([[False, False, True, False]]))
    assert only.log_prob(torch.tensor([2])).item() == 0.0 and only.entropy().item() == 0.0


def ppo():
    return PPOPolicy({"seed": 0, "learn": {"lr": 0.0, "epoch_per_collect": 1, "batch_size": 64}},
                     gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Discrete(4))


def test_ppo_acting_logp_and_learned_entropy_use_the_masked_distribution():
    policy = ppo()
    rng = np.random.default_rng(0)
    obs = rng.uniform(-1, 1, (32, 3)).astype(np.float32)
    mask = rng.random((32, 4)) < 0.5
    mask[np.arange(32), rng.integers(4, size=32)] = True
    out = policy.collect_mode.forward(obs, action_mask=mask)
    assert mask[np.arange(32), out["action"]].all()
    with torch.no_grad():
        logits = policy.acting.dist(torch.as_tensor(obs)).logits.numpy().astype(float)
    by_hand = [hand_masked(list(l), list(m), a) for l, m, a in zip(logits, mask, out["action"])]
    np.testing.assert_allclose(out["logp"], [lp for lp, _ in by_hand], rtol=1e-5, atol=1e-6)
    b = {"obs": obs, "action": out["action"], "logp": out["logp"], "value": out["value"],
         "adv": rng.normal(size=32).astype(np.float32),
         "return": rng.normal(size=32).astype(np.float32), "action_mask": mask}
    stats = policy.learn_mode.forward(b)  # lr 0, one minibatch: π is still the acting π
    assert stats["approx_kl"] == pytest.approx(0.0, abs=1e-6)
    assert stats["entropy"] == pytest.approx(np.mean([h for _, h in by_hand]), rel=1e-5)
    unmasked = ppo().learn_mode.forward({k: v for k, v in b.items() if k != "action_mask"})
    assert unmasked["approx_kl"] > 1e-4  # the unmasked π is not the one that acted


def test_ppo_eval_picks_the_most_likely_valid_action():
    policy = ppo()
    obs = np.zeros((5, 3), np.float32)
    greedy = policy.eval_mode.forward(obs)["action"]
    mask = np.ones((5, 4), bool)
    mask[np.arange(5), greedy] = False
    masked = policy.eval_mode.forward(obs, action_mask=mask)["action"]
    assert mask[np.arange(5), masked].all()


@pytest.mark.parametrize("policy_cls", [PPOPolicy, DQNPolicy])
def test_evaluate_episodes_hands_masks_to_the_eval_face(policy_cls):
    with EnvManager("rlpipe/MaskedGrid-v0", n_envs=2, seed=0) as env:
        policy = policy_cls({"seed": 1}, env.observation_space, env.action_space)
        records = evaluate_episodes(policy.eval_mode, env, 4)
    # an untrained greedy policy never moves into a wall (−1): it walks until the time limit
    assert len(records) == 4 and all(r["return"] >= 0 for r in records)


def test_collected_masks_reach_the_replay_batch():
    from easydict import EasyDict

    from rlpipe.contexts import OnlineRLContext
    from rlpipe.data import ReplayBuffer
    from rlpipe.middleware import StepCollector, data_pusher

    cfg = EasyDict(policy=dict(collect=dict(n_sample=64, random_collect_size=64)))
    buffer_ = ReplayBuffer(1000, seed=0)
    with EnvManager("rlpipe/MaskedGrid-v0", n_envs=2, seed=0) as env:
        ctx = OnlineRLContext()
        next(StepCollector(cfg, None, env)(ctx))
        data_pusher(cfg, buffer_)(ctx)
    sample = buffer_.sample(32)
    assert sample["action_mask"].shape == sample["next_action_mask"].shape == (32, 4)
    assert sample["action_mask"][np.arange(32), sample["action"]].all()
