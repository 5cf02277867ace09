"""The acting path with an agent axis: StepCollector, evaluator and logger on multi-agent envs."""
from __future__ import annotations

import functools
import json

import numpy as np
import pytest
from easydict import EasyDict

pytest.importorskip("pettingzoo")

from rlpipe.contexts import MultiAgentRLContext  # noqa: E402
from rlpipe.engine import Task  # noqa: E402
from rlpipe.envs import MultiAgentEnvManager  # noqa: E402
from rlpipe.middleware import (StepCollector, evaluate_episodes, interaction_evaluator,  # noqa: E402
                               online_logger)
from tests.marl.fake_env import make  # noqa: E402


class RandomAgents:
    """A collect/eval face acting uniformly at random per agent; remembers what it was given."""

    supports_action_mask = True

    def __init__(self, env, seed=0):
        self.env, self.rng, self.calls = env, np.random.default_rng(seed), []

    def forward(self, obs, agent_mask, global_state, action_mask=None, **kwargs):
        self.calls.append({"obs": obs, "agent_mask": agent_mask.copy(),
                           "global_state": global_state, "action_mask": action_mask})
        n, agents = agent_mask.shape
        k = int(self.env.action_space.n)
        scores = self.rng.random((n, agents, k))
        if action_mask is not None:
            scores = np.where(action_mask, scores, -1.0)
        action = scores.argmax(axis=2)
        return {"action": action, "value": np.zeros((n, agents), np.float32)}


def collect(env, policy, n_sample, random_collect_size=0, iterations=1):
    cfg = EasyDict({"policy": {"collect": {"n_sample": n_sample}}})
    collector = StepCollector(cfg, policy, env, random_collect_size=random_collect_size)
    ctx = MultiAgentRLContext(agents=env.agents)
    steps, episodes = [], []
    with Task().start(ctx=ctx) as task:
        task.use(collector)
        for _ in range(iterations):
            task.run(max_step=1)
            steps += task.ctx.trajectories
            episodes += task.ctx.episode_info or []
        return task.ctx, steps, episodes


def test_records_carry_the_agent_axis_masks_and_global_state():
    env = MultiAgentEnvManager(make, n_envs=2, seed=0)
    policy = RandomAgents(env)
    ctx, steps, episodes = collect(env, policy, n_sample=8)  # 4 vector steps: one episode each
    assert ctx.env_step == 8 and ctx.env_episode == 2 and ctx.agents == ["a0", "a1", "a2"]
    assert len(steps) == 4
    for t, (record, call) in enumerate(zip(steps, policy.calls)):
        assert record["obs"].shape == (2, 3, 3) and record["action"].shape == (2, 3)
        assert record["reward"].shape == record["terminated"].shape == (2, 3)
        assert record["value"].shape == (2, 3) and record["valid"].all()
        np.testing.assert_array_equal(record["agent_mask"], call["agent_mask"])
        np.testing.assert_array_equal(record["global_state"], call["global_state"])
        assert record["global_state"][0, 0] == t and record["next_global_state"][0, 0] == t + 1
        alive = [True, t < 2, True]
        np.testing.assert_array_equal(record["agent_mask"], [alive] * 2)
        # a dead agent's rows carry nothing: no reward, no termination
        assert not record["reward"][~record["agent_mask"]].any()
        assert not record["terminated"][~record["agent_mask"]].any()
    for i, episode in enumerate(episodes):
        rewards = sum(r["reward"][i] for r in steps)
        assert episode["return"] == pytest.approx(float(rewards.sum()))
        assert episode["agent_returns"] == pytest.approx(dict(zip(env.agents, rewards.tolist())))
    env.close()


def test_warm_up_draws_valid_actions_for_present_agents_only():
    env = MultiAgentEnvManager(functools.partial(make, masks="info", length=6), n_envs=4, seed=0)
    policy = RandomAgents(env)
    _, steps, _ = collect(env, policy, n_sample=16, random_collect_size=100)
    assert not policy.calls  # warm-up: the policy is not asked
    for record in steps:
        action, mask, present = record["action"], record["action_mask"], record["agent_mask"]
        chosen = np.take_along_axis(mask, action[..., None], axis=2)[..., 0]
        assert chosen[present].all()  # valid actions for the agents in the episode
        assert (action[~present] == 0).all()  # the placeholder, sent to no env
    drawn = np.concatenate([r["action"][r["agent_mask"]] for r in steps])
    assert set(drawn.tolist()) == {0, 1, 2}


def test_a_single_agent_cursor_is_refused_for_a_multi_agent_manager():
    from rlpipe.middleware._acting import EnvCursor

    env = MultiAgentEnvManager(make, n_envs=1, seed=0)
    cursor = EnvCursor(env)
    cursor.obs, cursor.agents = np.zeros((1, 3, 3)), None  # as if acted from by another path
    cfg = EasyDict({"policy": {"collect": {"n_sample": 1}}})
    collector = StepCollector(cfg, RandomAgents(env), env, cursor=cursor)
    with pytest.raises(ValueError, match="cursor of its own"):
        collector.acting.act(0, {})
    env.close()


def test_random_agents_on_simple_spread_collect_correct_team_returns():
    pytest.importorskip("mpe2")
    env = MultiAgentEnvManager("mpe2/simple_spread_v3", n_envs=2, seed=0)
    assert env.agents == ["agent_0", "agent_1", "agent_2"] and env.state_space.shape == (54,)
    ctx, steps, episodes = collect(env, RandomAgents(env), n_sample=50)  # 25 steps: 1 episode
    assert ctx.env_step == 50 and [e["length"] for e in episodes] == [25, 25]
    for i, episode in enumerate(episodes):
        rewards = np.sum([r["reward"][i] for r in steps], axis=0)
        assert episode["return"] == pytest.approx(float(rewards.sum()), rel=1e-5)
        assert list(episode["agent_returns"]) == env.agents
        np.testing.assert_allclose(list(episode["agent_returns"].values()), rewards, rtol=1e-5)
    assert steps[-1]["truncated"].all() and not steps[-1]["next_agent_mask"].any()
    assert steps[0]["global_state"].shape == (2, 54)
    env.close()


def test_evaluator_reports_team_return_and_per_agent_means(tmp_path):
    env = MultiAgentEnvManager(make, n_envs=2, seed=0)
    records = evaluate_episodes(RandomAgents(env), env, n_episode=4)
    assert len(records) == 4
    for record in records:
        assert record["return"] == pytest.approx(sum(record["agent_returns"].values()))
        assert record["length"] == 4
    cfg = EasyDict({"policy": {"eval": {"evaluator": {"eval_freq": 1, "n_episode": 4}}},
                    "run_dir": str(tmp_path)})
    with Task().start(ctx=MultiAgentRLContext(agents=env.agents)) as task:
        task.use(interaction_evaluator(cfg, RandomAgents(env, seed=1), env))
        task.use(lambda ctx: None)  # no learner here: a middleware without a contract stands in
        task.use(online_logger(cfg))
        task.run(max_step=1)
    rows = [json.loads(line) for line in open(tmp_path / "metrics.jsonl")]
    agents = {k: v for k, v in rows[-1].items() if k.startswith("eval/agent_return/")}
    assert sorted(agents) == [f"eval/agent_return/a{k}" for k in range(3)]
    assert rows[-1]["eval/return_mean"] == pytest.approx(sum(agents.values()))
    env.close()


def test_logger_writes_collect_per_agent_returns(tmp_path):
    env = MultiAgentEnvManager(make, n_envs=2, seed=0)
    cfg = EasyDict({"policy": {"collect": {"n_sample": 8}}, "run_dir": str(tmp_path)})
    with Task().start(ctx=MultiAgentRLContext(agents=env.agents)) as task:
        task.use(StepCollector(cfg, RandomAgents(env), env))
        task.use(lambda ctx: None)  # no learner here: a middleware without a contract stands in
        task.use(online_logger(cfg))
        task.run(max_step=1)
    row = [json.loads(line) for line in open(tmp_path / "metrics.jsonl")][-1]
    per_agent = [row[f"collect/agent_return/a{k}"] for k in range(3)]
    assert row["collect/episode_return_mean"] == pytest.approx(sum(per_agent))
    assert per_agent[1] > 2 * 10 and per_agent[1] < 2 * 13  # a1 acted twice: 10 + action each
