"""The critic's input: global state (MAPPO), concatenated observations (MAPPO without a state),
the agent's own observation (IPPO); and the agent-id one-hot of the shared actor."""
import numpy as np
import pytest
import torch

from rlpipe.policies import IPPOPolicy, MAPPOPolicy, get_policy

from .fakes import FakeMultiAgentEnvManager


def _policy(cls, env, **model):
    return cls({"seed": 0, "model": model}, env.observation_space, env.action_space,
               n_agents=env.n_agents, state_space=env.state_space)


def _inputs(seed=0, B=3):
    rng = np.random.default_rng(seed)
    return (rng.random((B, 2, 4)).astype(np.float32), rng.random((B, 6)).astype(np.float32),
            np.ones((B, 2), bool))


def test_registered_and_auto_critic_follows_the_env():
    assert get_policy("mappo") is MAPPOPolicy and get_policy("ippo") is IPPOPolicy
    assert MAPPOPolicy.multi_agent and MAPPOPolicy.pipeline == "on-policy"
    assert _policy(MAPPOPolicy, FakeMultiAgentEnvManager()).critic_input == "state"
    assert _policy(MAPPOPolicy, FakeMultiAgentEnvManager(state=False)).critic_input == "concat_obs"
    assert _policy(IPPOPolicy, FakeMultiAgentEnvManager()).critic_input == "local"


def test_state_critic_reads_the_global_state_not_the_observations():
    p = _policy(MAPPOPolicy, FakeMultiAgentEnvManager())
    obs, state, mask = _inputs()
    v = p.value(obs, global_state=state, agent_mask=mask)
    assert v.shape == (3, 2)
    np.testing.assert_array_equal(p.value(obs + 5.0, global_state=state, agent_mask=mask), v)
    assert not np.allclose(p.value(obs, global_state=state + 1.0, agent_mask=mask), v)
    with pytest.raises(ValueError, match="global_state is None"):
        p.value(obs, agent_mask=mask)


def test_concat_critic_sees_every_present_agent():
    p = _policy(MAPPOPolicy, FakeMultiAgentEnvManager(state=False))
    obs, _, mask = _inputs()
    v = p.value(obs, agent_mask=mask)
    other = obs.copy()
    other[:, 1] += 1.0  # agent 1's observation changes agent 0's value
    assert not np.allclose(p.value(other, agent_mask=mask)[:, 0], v[:, 0])
    gone = mask.copy()
    gone[:, 1] = False  # ... but not once agent 1 is gone
    np.testing.assert_array_equal(p.value(other, agent_mask=gone), p.value(obs, agent_mask=gone))


def test_local_critic_sees_only_its_own_agent():
    p = _policy(IPPOPolicy, FakeMultiAgentEnvManager())
    obs, state, mask = _inputs()
    v = p.value(obs, global_state=state, agent_mask=mask)
    other = obs.copy()
    other[:, 1] += 1.0
    got = p.value(other, global_state=state + 1.0, agent_mask=mask)
    np.testing.assert_array_equal(got[:, 0], v[:, 0])
    assert not np.allclose(got[:, 1], v[:, 1])
    with pytest.raises(ValueError, match="critic_input must be one of"):
        IPPOPolicy({"model": {"critic_input": "state"}}, FakeMultiAgentEnvManager().observation_space,
                   FakeMultiAgentEnvManager().action_space, n_agents=2)


def _train_own_id(agent_id):
    """Both agents see the same observation; agent i is rewarded for action i."""
    env = FakeMultiAgentEnvManager(n_envs=8, goal="own_id")
    p = MAPPOPolicy({"seed": 1, "model": {"agent_id": agent_id}, "learn": {"entropy_coef": 0.0}},
                    env.observation_space, env.action_space, n_agents=2,
                    state_space=env.state_space)
    from rlpipe.middleware.onpolicy import rollout_to_batch
    from .fakes import collect
    obs = None
    for _ in range(12):
        p.collect_mode.refresh()
        steps, obs = collect(p.collect_mode, env, 8, obs)
        p.learn_mode.forward(rollout_to_batch(steps, 0.99, 0.95, p.collect_mode.value))
    obs0 = env.reset()
    assert np.array_equal(obs0[:, 0], obs0[:, 1])  # identical observations
    return p, p.eval_mode.forward(obs0, agent_mask=env.agent_mask,
                                  global_state=env.global_state)["action"]


def test_agent_id_lets_shared_parameters_act_differently():
    _, action = _train_own_id(agent_id=True)
    assert (action[:, 0] == 0).all() and (action[:, 1] == 1).all()
    p, action = _train_own_id(agent_id=False)  # without the id the agents cannot differ
    np.testing.assert_array_equal(action[:, 0], action[:, 1])
    obs = np.zeros((1, 2, 4), np.float32)
    logits = p.model.logits(torch.as_tensor(obs))
    torch.testing.assert_close(logits[:, 0], logits[:, 1])


def test_non_shared_parameters_are_one_network_per_agent():
    env = FakeMultiAgentEnvManager()
    shared = _policy(MAPPOPolicy, env)
    own = _policy(MAPPOPolicy, env, share_params=False)
    assert len(own.model.actor.nets) == 2 and len(shared.model.actor.nets) == 1
    obs = np.zeros((2, 2, 4), np.float32)
    out = own.collect_mode.forward(obs, agent_mask=np.ones((2, 2), bool),
                                   global_state=np.zeros((2, 6), np.float32))
    assert out["action"].shape == (2, 2) and out["logp"].shape == out["value"].shape == (2, 2)


def test_layer_norm_normalises_each_network_input():
    """With layer_norm the actor's and critic's outputs ignore a shift and positive scaling of
    their whole input (the input LayerNorm); without it they do not."""
    env = FakeMultiAgentEnvManager()
    obs, state, mask = _inputs()
    moved = (3.0 * obs + 1.0, 3.0 * state + 1.0)
    for layer_norm, same in ((True, True), (False, False)):
        p = _policy(MAPPOPolicy, env, agent_id=False, layer_norm=layer_norm)
        m = p.model
        n_norms = sum(isinstance(x, torch.nn.LayerNorm) for x in m.modules())
        assert n_norms == (6 if layer_norm else 0)  # input + 2 hidden, actor and critic
        with torch.no_grad():
            before = (m.logits(torch.as_tensor(obs)), m.value(None, torch.as_tensor(state)))
            after = (m.logits(torch.as_tensor(moved[0])), m.value(None, torch.as_tensor(moved[1])))
        for a, b in zip(before, after):
            assert torch.allclose(a, b, atol=1e-4) == same


def test_zoo_builds_a_multi_agent_policy_from_the_manager_and_refuses_a_single_agent_env():
    from easydict import EasyDict

    from rlpipe.pipelines.base import make_policy
    cfg = EasyDict(seed=5, env={"id": "CartPole-v1"}, policy={"seed": None})
    env = FakeMultiAgentEnvManager(state=False)
    policy = make_policy(cfg, MAPPOPolicy, env)
    assert policy.n_agents == 2 and policy.critic_input == "concat_obs" and policy.cfg.seed == 5
    single = type("Single", (), {"observation_space": env.observation_space,
                                 "action_space": env.action_space})()
    with pytest.raises(ValueError, match="multi-agent policy, but env 'CartPole-v1'"):
        make_policy(cfg, MAPPOPolicy, single)
