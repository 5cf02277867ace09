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


BOX_OBS = gym.spaces.Box(-1.0, 1.0, (3,), dtype="float32")
BOX_ACT = gym.spaces.Box(-2.0, 2.0, (1,), dtype="float32")


def test_sac_and_td3_take_an_actor_and_twin_critic_and_check_them():
    from torch import nn

    from rlpipe.models import DeterministicActor, SquashedGaussianActor, TwinQCritic
    from rlpipe.policies import SACPolicy, TD3Policy

    model = nn.ModuleDict(dict(actor=SquashedGaussianActor(BOX_OBS, 1), critic=TwinQCritic(BOX_OBS, 1)))
    sac = SACPolicy(None, BOX_OBS, BOX_ACT, model=model)
    assert sac.actor is model.actor and sac.critic is model.critic
    td3 = TD3Policy(None, BOX_OBS, BOX_ACT, model=nn.ModuleDict(
        dict(actor=DeterministicActor(BOX_OBS, 1), critic=TwinQCritic(BOX_OBS, 1))))
    assert isinstance(td3.actor, DeterministicActor)
    with pytest.raises(TypeError, match="needs .actor, a SquashedGaussianActor"):
        SACPolicy(None, BOX_OBS, BOX_ACT, model=nn.ModuleDict(
            dict(actor=DeterministicActor(BOX_OBS, 1), critic=TwinQCritic(BOX_OBS, 1))))
    with pytest.raises(ValueError, match="built for 2 action dimensions"):
        SACPolicy(None, BOX_OBS, BOX_ACT, model=nn.ModuleDict(
            dict(actor=SquashedGaussianActor(BOX_OBS, 2), critic=TwinQCritic(BOX_OBS, 1))))
    with pytest.raises(ValueError, match="fails on a batch of observations"):
        SACPolicy(None, OBS, BOX_ACT, model=model)
