"""Policies built around a user's network, as DI-engine's scripts build them:
`model = DQN(**cfg.policy.model); policy = DQNPolicy(cfg.policy, model=model)`."""
import gymnasium as gym
import pytest
import torch

from rlpipe.models import ActorCritic, QNetwork
from rlpipe.policies import DQNPolicy, PPOPolicy
from rlpipe.zoo import get_entry

OBS = gym.spaces.Box(-1.0, 1.0, (4,), dtype="float32")
ACT = gym.spaces.Discrete(2)


def test_dqn_policy_trains_the_given_network_with_spaces_from_it():
    cfg = get_entry("cartpole-dqn").resolve()
    model = QNetwork(OBS, 2, **cfg.policy.model)
    policy = DQNPolicy(cfg.policy, model=model)
    assert policy.online is model and policy.obs_space == OBS and policy.action_space == ACT
    before = [p.clone() for p in model.parameters()]
    batch = {"obs": OBS.sample()[None].repeat(16, 0), "action": torch.zeros(16, dtype=torch.int64).numpy(),
             "reward": torch.ones(16).numpy(), "next_obs": OBS.sample()[None].repeat(16, 0),
             "terminated": torch.zeros(16).numpy()}
    policy.learn_mode.forward(batch)
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_dqn_policy_checks_the_given_network_against_the_spaces():
    with pytest.raises(ValueError, match=r"returns shape \(2, 3\) .* expected \(2, 2\)"):
        DQNPolicy(None, OBS, ACT, model=QNetwork(OBS, 3))
    other = gym.spaces.Box(-1.0, 1.0, (6,), dtype="float32")
    with pytest.raises(ValueError, match="the model was built for obs_space"):
        DQNPolicy(None, other, ACT, model=QNetwork(OBS, 2))
    with pytest.raises(ValueError, match="fails on a batch of observations"):
        DQNPolicy(None, other, ACT, model=torch.nn.Linear(4, 2))
    with pytest.raises(TypeError, match="records no obs_space"):
        DQNPolicy(None, model=torch.nn.Linear(4, 2))
    with pytest.raises(TypeError, match="needs \\(cfg, obs_space, action_space\\) or"):
        DQNPolicy(None)


def test_ppo_policy_takes_an_actor_critic_and_refuses_other_networks():
    model = ActorCritic(OBS, ACT)
    policy = PPOPolicy(None, model=model)
    assert policy.model is model and policy.action_space == ACT
    with pytest.raises(ValueError, match="the model was built for action_space"):
        PPOPolicy(None, OBS, gym.spaces.Discrete(3), model=model)
    with pytest.raises(TypeError, match="must be an rlpipe.models.ActorCritic"):
        PPOPolicy(None, OBS, ACT, model=torch.nn.Linear(4, 2))
