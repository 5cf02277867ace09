"""Hidden state through the acting path: reset at every episode start (reset, autoreset,
restart after a crash), carried otherwise, recorded with each step, restored on resume."""
import functools

import numpy as np
import pytest
from easydict import EasyDict

from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import Task
from rlpipe.envs import EnvManager
from rlpipe.middleware import EpisodeCollector, StepCollector, inferencer, rolloutor
from rlpipe.middleware.collector import EnvCursor
from tests.envs.env_fakes import CountingEnv, FlakyEnv
from tests.middleware.fakes import FakeCollectPolicy

from .fakes import CountingPolicy

FEED_FORWARD_KEYS = {"obs", "action", "reward", "next_obs", "terminated", "truncated", "valid",
                     "value"}


def cfg(n_sample=8, random_collect_size=0, n_episode=4):
    return EasyDict(policy=dict(collect=dict(n_sample=n_sample, n_episode=n_episode,
                                             random_collect_size=random_collect_size)))


def counting_env(length=3, n_envs=2, **kwargs):
    return EnvManager(functools.partial(CountingEnv, length), n_envs=n_envs, seed=0, mode="sync", **kwargs)


def policy_for(env):
    return CountingPolicy(env.observation_space, env.action_space)


def collect(collector, ctx):
    gen = collector(ctx)
    if hasattr(gen, "__next__"):
        next(gen, None)
        next(gen, None)
    return ctx.trajectories


def check_records(records):
    """CountingEnv's obs is [t since the episode began, a draw fixed per episode]: the state a
    step started from counts t steps and remembers the episode's first obs; `first` is t == 0."""
    assert records
    for r in records:
        t = r["obs"][:, 0]
        assert r["first"].dtype == np.bool_ and r["first"].shape == t.shape
        np.testing.assert_array_equal(r["first"], t == 0)
        np.testing.assert_array_equal(r["state"]["count"][:, 0], t)
        remembered = r["state"]["memory"]["first_obs"]
        np.testing.assert_array_equal(remembered[r["first"]], 0.0)  # zeroed rows
        np.testing.assert_array_equal(remembered[~r["first"], 1], r["obs"][~r["first"], 1])


def test_state_is_reset_at_each_episode_start_and_carried_otherwise():
    env = counting_env(length=3)
    policy = policy_for(env)
    ctx = OnlineRLContext()
    records = collect(StepCollector(cfg(n_sample=16), policy.collect_mode, env), ctx)
    check_records(records)
    firsts = np.array([r["first"] for r in records])
    assert firsts[0].all() and firsts[3].all() and not firsts[1:3].any()  # autoreset at step 3
    # what the policy was handed is what the records say it started from
    for (face, obs, state, first, _), r in zip(policy.calls, records):
        assert face == "collect"
        np.testing.assert_array_equal(first, r["first"])
        np.testing.assert_array_equal(state["count"], r["state"]["count"])
    assert set(records[0]) == FEED_FORWARD_KEYS | {"first", "state"}


def test_a_crashed_and_restarted_env_begins_with_a_fresh_state():
    env = EnvManager(lambda: FlakyEnv(fail_at=4, length=6, only_seed=1), n_envs=2, seed=0,
                     mode="sync")
    records = collect(StepCollector(cfg(n_sample=20), policy_for(env).collect_mode, env),
                      OnlineRLContext())
    valid = np.array([r["valid"] for r in records])
    assert not valid[3, 1] and valid[3, 0]  # env 1 crashed in its 4th step, env 0 went on
    check_records(records)
    assert records[4]["first"].tolist() == [False, True]


def test_async_workers_rebuilt_after_a_dead_worker_begin_with_fresh_states():
    env = EnvManager(lambda: FlakyEnv(fail_at=3, how="exit", length=50), n_envs=2, seed=0,
                     mode="async")
    try:
        records = collect(StepCollector(cfg(n_sample=10), policy_for(env).collect_mode, env),
                          OnlineRLContext())
    finally:
        env.close()
    assert not records[2]["valid"].any()
    check_records(records)
    assert records[3]["first"].all() and not records[4]["first"].any()


def test_inferencer_rolloutor_and_episode_collector_carry_the_state_the_same_way():
    env = counting_env(length=4)
    policy = policy_for(env)
    infer, roll = inferencer(None, policy.collect_mode, env), rolloutor(policy.collect_mode, env)
    task, ctx = Task(), OnlineRLContext()
    with task.start(ctx=ctx):
        for _ in range(9):
            infer(ctx)
            roll(ctx)
    check_records(ctx.trajectories)
    assert ctx.inference_output[1]["state"]["count"].shape == (1,)  # per-env view of the state
    by_collector = collect(StepCollector(cfg(n_sample=18), policy_for(env := counting_env(
        length=4)).collect_mode, env), OnlineRLContext())
    for a, b in zip(ctx.trajectories, by_collector):
        np.testing.assert_array_equal(a["state"]["count"], b["state"]["count"])
        np.testing.assert_array_equal(a["first"], b["first"])

    env = counting_env(length=3)
    ctx = OnlineRLContext()
    EpisodeCollector(cfg(n_episode=4), policy_for(env).collect_mode, env)(ctx)
    for episode in ctx.episodes:
        assert [bool(step["first"]) for step in episode] == [True, False, False]
        assert [float(step["state"]["count"][0]) for step in episode] == [0.0, 1.0, 2.0]


def test_warm_up_acts_at_random_and_still_advances_the_state():
    env = counting_env(length=5)
    policy = policy_for(env)
    records = collect(StepCollector(cfg(n_sample=20, random_collect_size=10),
                                    policy.collect_mode, env), OnlineRLContext())
    check_records(records)  # the state went on through the warm-up steps
    warm = np.concatenate([r["action"] for r in records[:5]])
    after = np.concatenate([r["action"] for r in records[5:]])
    assert len(policy.calls) == len(records)  # the policy was asked for the state every step
    assert (warm == 1).any() and (after == 0).all()  # CountingPolicy acts 0 on CountingEnv
    assert "value" not in records[0] and "value" in records[5]  # warm-up rows: action, state


def test_resume_restores_the_hidden_state_exactly():
    env = counting_env(length=5)
    a = StepCollector(cfg(n_sample=6), policy_for(env).collect_mode, env)
    collect(a, OnlineRLContext())  # mid-episode: t = 3 in both envs
    saved, env_state = a.get_state(), env.get_state()
    np.testing.assert_array_equal(saved["state"]["count"][:, 0], [3, 3])
    later = collect(a, OnlineRLContext())

    env_b = counting_env(length=5)
    b = StepCollector(cfg(n_sample=6), policy_for(env_b).collect_mode, env_b)
    env_b.set_state(env_state)
    b.set_state(saved)
    resumed = collect(b, OnlineRLContext())
    assert len(later) == len(resumed)
    for x, y in zip(later, resumed):
        np.testing.assert_array_equal(x["first"], y["first"])
        np.testing.assert_array_equal(x["state"]["count"], y["state"]["count"])
        np.testing.assert_array_equal(x["state"]["memory"]["first_obs"],
                                      y["state"]["memory"]["first_obs"])
        np.testing.assert_array_equal(x["obs"], y["obs"])
    with pytest.raises(ValueError, match="feed-forward run"):
        b.set_state({"obs": saved["obs"], "mask": None})


@pytest.mark.parametrize("async_mode", [False, True])
def test_state_is_carried_in_async_mode_too(async_mode):
    env = counting_env(length=3)
    seen = []
    task = Task()
    with task.start(async_mode=async_mode, ctx=OnlineRLContext()):
        task.use(StepCollector(cfg(n_sample=6), policy_for(env).collect_mode, env))
        task.use(lambda ctx: seen.extend(ctx.trajectories))
        task.run(max_step=4)
    assert len(seen) == 12
    check_records(seen)


def test_feed_forward_acting_is_unchanged():
    env = counting_env(length=3)
    collector = StepCollector(cfg(n_sample=8), FakeCollectPolicy(), env)
    records = collect(collector, OnlineRLContext())
    assert all(set(r) == FEED_FORWARD_KEYS for r in records)
    assert collector.acting.cursor.state is None
    assert type(collector.acting).__name__ == "Acting"
    assert collector.get_state()["state"] is None
    assert "state" not in collector.acting.policy.kwargs[0]


def test_a_cursor_is_not_shared_between_recurrent_and_feed_forward_acting():
    env = counting_env()
    cursor = EnvCursor(env)
    collect(StepCollector(cfg(n_sample=2), FakeCollectPolicy(), env, cursor=cursor),
            OnlineRLContext())
    with pytest.raises(ValueError, match="feed-forward policy.*own cursor"):
        StepCollector(cfg(), policy_for(env).collect_mode, env, cursor=cursor)
    cursor = EnvCursor(env)
    StepCollector(cfg(), policy_for(env).collect_mode, env, cursor=cursor)
    with pytest.raises(ValueError, match="recurrent policy's hidden state.*FakeCollectPolicy"):
        StepCollector(cfg(), FakeCollectPolicy(), env, cursor=cursor)
