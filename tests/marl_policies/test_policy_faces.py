"""MAPPO's faces and update: absent agents contribute nothing, action masks, Box actions,
state_dict round trip, and the errors that name what is wrong."""
import gymnasium as gym
import numpy as np
import pytest
import torch

from rlpipe.middleware.onpolicy import rollout_to_batch
from rlpipe.models import MultiAgentActorCritic
from rlpipe.policies import IPPOPolicy, MAPPOPolicy

from .fakes import FakeMultiAgentEnvManager, collect


def _policy(env, cls=MAPPOPolicy, **learn):
    return cls({"seed": 3, "learn": dict(epoch_per_collect=2, n_minibatches=2, **learn)},
               env.observation_space, env.action_space, n_agents=2, state_space=env.state_space)


def _batch(env, policy, n_steps=6):
    steps, _ = collect(policy.collect_mode, env, n_steps)
    return rollout_to_batch(steps, 0.99, 0.95, policy.collect_mode.value)


@pytest.mark.parametrize("cls,state", [(MAPPOPolicy, True), (MAPPOPolicy, False),
                                       (IPPOPolicy, True)])
def test_dead_agent_rows_change_nothing(cls, state):
    env = FakeMultiAgentEnvManager(n_envs=3, death_step=2, state=state, action_masks=True)
    batch = _batch(env, _policy(env, cls))
    gone = ~batch["agent_mask"]
    assert gone.any() and batch["agent_mask"].any()
    rng = np.random.default_rng(0)
    junk = {k: v.copy() for k, v in batch.items()}
    for key in ("obs", "logp", "adv", "return", "value", "action", "action_mask"):
        arr = junk[key]
        noise = (rng.integers(0, 7, arr.shape) if arr.dtype.kind in "iu" else
                 rng.random(arr.shape) > 0.5 if arr.dtype == bool else
                 rng.normal(0, 100, arr.shape))
        arr[gone] = noise.astype(arr.dtype)[gone]
    junk["obs"][gone] = np.nan  # not even a NaN reaches the loss
    results = []
    for b in (batch, junk):
        p = _policy(env, cls)
        stats = p.learn_mode.forward(b)
        results.append((stats, [t.detach().clone() for t in p.model.parameters()]))
    assert results[0][0] == results[1][0]
    for a, b in zip(results[0][1], results[1][1]):
        assert torch.equal(a, b)



@pytest.mark.parametrize("cls,state", [(MAPPOPolicy, True), (MAPPOPolicy, False),
                                       (IPPOPolicy, True)])
def test_inputs_made_once_per_call_update_as_the_observations_per_minibatch(cls, state,
                                                                            monkeypatch):
    # 1-D Box features hold no parameters, so the learner joins the ids once per learn call;
    # that path and the per-minibatch forward from the observations give the same update
    env = FakeMultiAgentEnvManager(n_envs=3, death_step=2, state=state, action_masks=True)
    batch = _batch(env, _policy(env, cls))
    results = []
    for fixed in (True, False):
        monkeypatch.setattr(MultiAgentActorCritic, "fixed_inputs", property(lambda self: fixed))
        p = _policy(env, cls)
        stats = [p.learn_mode.forward(batch) for _ in range(2)]
        results.append((stats, [t.detach().clone() for t in p.model.parameters()]))
    assert results[0][0] == results[1][0]
    for a, b in zip(results[0][1], results[1][1]):
        assert torch.equal(a, b)


def test_only_features_without_parameters_are_fixed_inputs():
    ids_only = MultiAgentActorCritic(gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(3), 2,
                                     critic_input="concat_obs")
    assert ids_only.fixed_inputs
    images = MultiAgentActorCritic(gym.spaces.Box(0, 255, (3, 36, 36), np.uint8),
                                   gym.spaces.Discrete(3), 2, critic_input="local")
    assert not images.fixed_inputs  # the conv trunk trains: its features change every step

def test_faces_with_action_masks_and_absent_agents():
    env = FakeMultiAgentEnvManager(n_envs=4, death_step=1, action_masks=True)
    p = _policy(env)
    steps, _ = collect(p.collect_mode, env, 6)
    for s in steps:  # action 2 is masked; an absent agent's all-False mask is not an error
        assert (s["action"][s["agent_mask"]] != 2).all()
        assert s["logp"].shape == s["value"].shape == (4, 2)
    assert not all(s["agent_mask"].all() for s in steps)
    obs = env.reset()
    mask = env.action_mask.copy()
    mask[:, :, 0] = False
    act = p.eval_mode.forward(obs, agent_mask=env.agent_mask, global_state=env.global_state,
                              action_mask=mask)["action"]
    assert (act == 1).all()
    mask[0, 0, :] = False  # a present agent with no valid action
    with pytest.raises(ValueError, match="allows no action"):
        p.collect_mode.forward(obs, agent_mask=env.agent_mask, global_state=env.global_state,
                               action_mask=mask)


def test_box_actions_are_clipped_for_the_env_and_learned_unclipped():
    env = FakeMultiAgentEnvManager(n_envs=2)
    space = gym.spaces.Box(-0.1, 0.1, (2,), np.float32)
    p = MAPPOPolicy({"seed": 0, "model": {"init_log_std": 1.0},
                     "learn": {"epoch_per_collect": 1}}, env.observation_space, space,
                    n_agents=2, state_space=env.state_space)
    obs = env.reset()
    out = p.collect_mode.forward(obs, agent_mask=env.agent_mask, global_state=env.global_state)
    assert out["action"].shape == out["raw_action"].shape == (2, 2, 2)
    assert np.abs(out["action"]).max() <= 0.1 < np.abs(out["raw_action"]).max()
    batch = dict(obs=obs, action=out["action"], raw_action=out["raw_action"], logp=out["logp"],
                 value=out["value"], adv=np.ones((2, 2), np.float32),
                 **{"return": np.ones((2, 2), np.float32)}, agent_mask=env.agent_mask,
                 global_state=env.global_state)
    stats = p.learn_mode.forward(batch)
    # one update, measured before its step: the stored logp is that of the unclipped sample
    assert stats["approx_kl"] == pytest.approx(0.0, abs=1e-6) and stats["n_updates"] == 1


def test_state_dict_round_trip():
    env = FakeMultiAgentEnvManager(n_envs=3, death_step=2)
    p = _policy(env)
    p.learn_mode.forward(_batch(env, p))
    state = p.state_dict()
    q = _policy(env)
    q.load_state_dict(state)
    assert q.learn_mode.train_iter == p.learn_mode.train_iter > 0
    obs = env.reset()
    kw = dict(agent_mask=env.agent_mask, global_state=env.global_state)
    a, b = p.collect_mode.forward(obs, **kw), q.collect_mode.forward(obs, **kw)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    torch.testing.assert_close(q.model.value_norm.mean, p.model.value_norm.mean)
    with pytest.raises(KeyError, match="lacks"):
        q.load_state_dict({"model": state["model"]})


def test_errors_name_the_fix():
    env = FakeMultiAgentEnvManager(n_envs=2)
    p = _policy(env)
    with pytest.raises(ValueError, match=r"\[n_envs, n_agents=2"):
        p.collect_mode.forward(np.zeros((2, 4), np.float32))
    with pytest.raises(KeyError, match="agent_mask"):
        p.learn_mode.forward({"obs": np.zeros((2, 2, 4), np.float32)})
    with pytest.raises(ValueError, match="value_loss"):
        _policy(env, value_loss="l1")
