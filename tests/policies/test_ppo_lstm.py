"""LSTM-PPO: acting per the recurrent API, the learning re-run reproduces the acting-time
outputs, the recurrent bootstrap, config checks, and learning a memory task."""
import gymnasium as gym
import numpy as np
import pytest
import torch
from easydict import EasyDict

from rlpipe.contexts import OnlineRLContext
from rlpipe.envs import EnvManager
from rlpipe.middleware import StepCollector
from rlpipe.middleware.onpolicy import recurrent_rollout
from rlpipe.policies import PPOLSTMPolicy, get_policy
from rlpipe.training import train
from tests.recurrent.test_acting_state import collect

CFG = EasyDict(policy=dict(collect=dict(n_sample=33)))


def rollout(kind="lstm", env_id="rlpipe/RememberFirst-v0", share=False):
    env = EnvManager(env_id, n_envs=3, seed=0, mode="sync")
    policy = PPOLSTMPolicy(dict(seed=0, model=dict(core_kind=kind, core_size=8, hidden=(8,),
                                                   share_encoder=share)),
                           env.observation_space, env.action_space)
    steps = collect(StepCollector(CFG, policy.collect_mode, env), OnlineRLContext())
    env.close()
    return policy, steps


@pytest.mark.parametrize("kind,share", [("lstm", False), ("gru", True)])
def test_sequence_rerun_from_stored_states_reproduces_collected_logp_and_values(kind, share):
    policy, steps = rollout(kind, share=share)
    assert set(steps[0]["state"]) == ({"actor"} if share else {"actor", "critic"})
    store = recurrent_rollout(steps, 0.99, 0.95, policy.collect_mode.next_values)["rollout"]
    firsts = np.array([s["first"] for s in steps])
    assert firsts[0].all() and firsts[4].all() and not firsts[1:4].any()  # episodes of 4 steps
    seen = 0
    for mb in store.sequence_minibatches(chunk_len=5, n_minibatches=3, rng=0):  # chunks cross episodes
        b = {k: torch.as_tensor(v) if not isinstance(v, dict) else v for k, v in mb.items()}
        state = {p: {k: torch.as_tensor(v) for k, v in s.items()} for p, s in mb["state"].items()}
        with torch.no_grad():
            dist, value, _ = policy.model(b["obs"], state, b["first"])
        mask = b["mask"]
        logp = dist.log_prob(b["action"].long())
        torch.testing.assert_close(logp[mask], b["logp"][mask], atol=1e-5, rtol=0)
        torch.testing.assert_close(value[mask], b["value"][mask], atol=1e-5, rtol=0)
        seen += int(mask.sum())
    assert seen == len(steps) * 3 >= 33


def test_bootstrap_uses_the_carried_state():
    policy, steps = rollout(env_id="rlpipe/CartPoleNoVel-v1")  # no episode ends in 33 steps
    values = np.array([s["value"] for s in steps])
    next_values = policy.collect_mode.next_values(
        recurrent_rollout(steps, 0.99, 0.95, policy.collect_mode.next_values)["rollout"].data)
    # V(next_obs[t] | state after t) is the next step's V(obs[t + 1] | its input state)
    np.testing.assert_allclose(next_values[:-1], values[1:], atol=1e-5)
    with pytest.raises(TypeError, match="next_values"):
        policy.collect_mode.value(steps[0]["obs"])


def test_faces_follow_the_recurrent_api_and_zero_state_where_first():
    space = gym.spaces.Box(-1, 1, (2,), np.float32)
    policy = PPOLSTMPolicy(dict(seed=1), space, gym.spaces.Box(-2, 2, (1,), np.float32))
    assert get_policy("ppo-lstm") is PPOLSTMPolicy and PPOLSTMPolicy.recurrent
    state = policy.collect_mode.initial_state(2)
    assert state["actor"]["h"].shape == (2, 64) and set(state["critic"]) == {"h", "c"}
    obs = np.ones((2, 2), np.float32)
    out = policy.collect_mode.forward(obs, state=state, first=np.ones(2, bool))
    assert out["action"].shape == (2, 1) and np.abs(out["action"]).max() <= 2
    noisy = {p: {k: v + 5.0 for k, v in s.items()} for p, s in out["state"].items()}
    a = policy.eval_mode.forward(obs, state=noisy, first=np.array([True, False]))
    b = policy.eval_mode.forward(obs, state=state, first=np.array([True, False]))
    np.testing.assert_allclose(a["action"][0], b["action"][0])  # row 0 was reset: same action
    assert not np.allclose(a["state"]["actor"]["h"][1], b["state"]["actor"]["h"][1])
    with pytest.raises(TypeError, match="state=state, first=first"):
        policy.collect_mode.forward(obs)
    with pytest.raises(ValueError, match="core_kind"):
        PPOLSTMPolicy(dict(model=dict(core_kind="rnn")), space, gym.spaces.Discrete(2))
    with pytest.raises(KeyError, match="rollout"):
        policy.learn_mode.forward({"obs": obs})


def _remember_first(algo, tmp_path):
    return train(algo=algo, env="rlpipe/RememberFirst-v0", seed=0, max_env_step=2048,
                 progress=False, run_dir=str(tmp_path / algo),
                 overrides=["env.n_envs=4", "policy.collect.n_sample=64",
                            "policy.eval.evaluator.n_episode=20",
                            "policy.eval.evaluator.eval_freq=200"]
                 + (["policy.learn.chunk_len=16", "policy.learn.batch_size=64"]
                    if algo == "ppo-lstm" else []))


@pytest.mark.slow
def test_remembers_the_first_observation_where_feed_forward_ppo_cannot(tmp_path):
    lstm = _remember_first("ppo-lstm", tmp_path)
    assert lstm["best_eval_value"] == 1.0 and lstm["eval_value"] >= 0.9, lstm
    ff = _remember_first("ppo", tmp_path)  # its greedy action ignores the cue: chance, ~0.5
    assert ff["best_eval_value"] <= 0.8, ff
