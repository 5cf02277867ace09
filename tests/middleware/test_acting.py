"""The one acting path: collectors and inferencer/rolloutor act, step and count the same way,
from a cursor the pipeline owns."""
import numpy as np
import pytest
from easydict import EasyDict

from rlpipe.contexts import OnlineRLContext
from rlpipe.data import PerEnvOutput
from rlpipe.engine import Task, contract
from rlpipe.middleware import EpisodeCollector, StepCollector, inferencer, rolloutor
from rlpipe.middleware.collector import EnvCursor

from .fakes import FakeCollectPolicy, FakeEnvManager


def cfg(n_sample=4, random_collect_size=0):
    return EasyDict(policy=dict(collect=dict(n_sample=n_sample, n_episode=2,
                                             random_collect_size=random_collect_size)))


def collect(collector, ctx):
    gen = collector(ctx)
    if hasattr(gen, "__next__"):
        next(gen, None)
        next(gen, None)


def acting_pair(policy, env):
    """An inferencer and a rolloutor sharing a cursor the test holds."""
    cursor = EnvCursor(env)
    infer = inferencer(None, policy, env, cursor=cursor)
    return infer, rolloutor(policy, env, cursor=cursor), cursor


def test_step_collector_records_what_inferencer_and_rolloutor_record():
    by_collector, by_pair = OnlineRLContext(), OnlineRLContext()
    collect(StepCollector(cfg(n_sample=10), FakeCollectPolicy(), FakeEnvManager(length=3)),
            by_collector)
    env, policy = FakeEnvManager(length=3), FakeCollectPolicy()
    infer, roll, cursor = acting_pair(policy, env)
    for _ in range(5):
        infer(by_pair)
        roll(by_pair)
    assert len(by_collector.trajectories) == len(by_pair.trajectories) == 5
    for a, b in zip(by_collector.trajectories, by_pair.trajectories):
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
    for field in ("env_step", "env_episode", "trajectory_end_idx", "episode_info"):
        assert getattr(by_collector, field) == getattr(by_pair, field), field


def test_collectors_leave_the_last_step_per_env_view_on_the_context():
    ctx = OnlineRLContext()
    collect(StepCollector(cfg(n_sample=4), FakeCollectPolicy(), FakeEnvManager(n_envs=2)), ctx)
    out = ctx.inference_output
    assert isinstance(out, PerEnvOutput) and sorted(out) == [0, 1]
    assert out[1] == {"action": 1, "value": 1.0}  # the 2nd vector step acted from t=1
    np.testing.assert_array_equal(out.batch["action"], ctx.action)
    np.testing.assert_array_equal(ctx.obs, ctx.trajectories[-1]["obs"])

    ctx = OnlineRLContext()
    EpisodeCollector(cfg(), FakeCollectPolicy(), FakeEnvManager(n_envs=2, length=2))(ctx)
    assert sorted(ctx.inference_output) == [0, 1]
    np.testing.assert_array_equal(ctx.obs, ctx.trajectories[-1]["obs"])


def test_a_cursor_carries_the_envs_position_from_one_acting_middleware_to_another():
    env, policy = FakeEnvManager(n_envs=2, length=10), FakeCollectPolicy()
    infer, roll, cursor = acting_pair(policy, env)
    ctx = OnlineRLContext()
    for _ in range(3):
        infer(ctx)
        roll(ctx)
    np.testing.assert_array_equal(cursor.obs[:, 1], [3, 3])
    ctx = OnlineRLContext()
    collect(StepCollector(cfg(n_sample=2), policy, env, cursor=cursor), ctx)
    np.testing.assert_array_equal(ctx.trajectories[0]["obs"][:, 1], [3, 3])  # continued


def test_the_shared_cursor_belongs_to_the_task_and_ends_with_its_run():
    env, policy = FakeEnvManager(n_envs=2, length=10), FakeCollectPolicy()
    first_obs = []

    def pipeline(t):
        t.use(inferencer(None, policy, env))
        t.use(rolloutor(policy, env))
        t.use(lambda ctx: first_obs.append(int(ctx.trajectories[0]["obs"][0, 1])))

    t = Task()
    with t.start():
        pipeline(t)
        t.run(max_step=3)
    assert first_obs == [0, 1, 2]  # the rolloutor moved the inferencer's cursor
    with t.start():  # a new run: a new cursor, the envs are reset
        pipeline(t)
        t.run(max_step=1)
    other = Task()
    with other.start():  # another task's pipeline on the same env does not share the cursor
        pipeline(other)
        t_before = env.t.copy()
        other.run(max_step=1)
    assert first_obs[3:] == [0, 0] and (t_before == 1).all()


def test_inferencer_refreshes_the_acting_weights_once_per_iteration():
    env, policy = FakeEnvManager(n_envs=2), FakeCollectPolicy()
    infer, roll, cursor = acting_pair(policy, env)
    t = Task()
    with t.start():
        t.use(lambda ctx: [(infer(ctx), roll(ctx)) for _ in range(2)] and None)
        t.run(max_step=3)
    assert policy.refreshes == 3 and len(policy.kwargs) == 6


def test_seeded_inferencer_and_warm_up():
    env, policy = FakeEnvManager(n_envs=2), FakeCollectPolicy()
    seeds = []
    reset = env.reset
    env.reset = lambda seed=None: seeds.append(seed) or reset(seed)
    cursor = EnvCursor(env)
    infer = inferencer(7, policy, env, cursor=cursor, random_collect_size=4)
    roll = rolloutor(policy, env, cursor=cursor)
    ctx = OnlineRLContext()
    for _ in range(3):
        infer(ctx)
        roll(ctx)
    assert seeds == [7]
    assert len(policy.kwargs) == 1  # 2 random vector steps (4 env steps), then the policy
    assert "value" not in ctx.trajectories[0] and "value" in ctx.trajectories[2]


def test_collector_state_round_trips_and_wrong_cursors_are_refused():
    env = FakeEnvManager(n_envs=2, length=10)
    a = StepCollector(cfg(n_sample=4), FakeCollectPolicy(), env)
    collect(a, OnlineRLContext())
    b = StepCollector(cfg(n_sample=2), FakeCollectPolicy(), env)
    b.set_state(a.get_state())
    ctx = OnlineRLContext()
    collect(b, ctx)
    np.testing.assert_array_equal(ctx.trajectories[0]["obs"][:, 1], [2, 2])
    with pytest.raises(KeyError, match="get_state"):
        b.set_state({"observations": None})
    with pytest.raises(ValueError, match="another env manager"):
        StepCollector(cfg(), FakeCollectPolicy(), FakeEnvManager(), cursor=EnvCursor(env))
    with pytest.raises(ValueError, match="another env manager"):
        inferencer(None, FakeCollectPolicy(), FakeEnvManager(), cursor=EnvCursor(env))
    with pytest.raises(ValueError, match=r"n_sample must be positive.*--set"):
        StepCollector(cfg(n_sample=0), FakeCollectPolicy(), env)


def test_inferencer_and_rolloutor_share_the_task_cursor_in_async_mode_too():
    env, policy = FakeEnvManager(n_envs=2, length=4), FakeCollectPolicy()
    acted_from = []
    t = Task()
    with t.start(async_mode=True):
        t.use(inferencer(None, policy, env))
        t.use(rolloutor(policy, env))
        t.use(contract(reads=("obs",))(lambda ctx: acted_from.append(int(ctx.obs[0, 1]))))
        t.run(max_step=6)
        assert t.ctx.env_step == 12 and t.ctx.env_episode == 2
    assert acted_from == [0, 1, 2, 3, 0, 1] and policy.refreshes == 6


def _env_step_calls(path):
    """The `<something env>.step(...)` calls in the source of `path`, except in a `step` method
    (an env wrapper stepping the env it wraps)."""
    import ast

    tree = ast.parse(path.read_text())
    in_wrappers = {id(node) for fn in ast.walk(tree)
                   if isinstance(fn, ast.FunctionDef) and fn.name == "step"
                   for node in ast.walk(fn)}
    calls = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "step" and "env" in ast.unparse(node.func.value).lower()
                and id(node) not in in_wrappers):
            calls.append(f"{path.name}: {ast.unparse(node)}")
    return calls


def test_only_the_acting_path_steps_an_env():
    """Collection, evaluation, data set collection and the export check all step their envs
    through `Acting`: outside the env managers, no other module calls `env.step(`."""
    import pathlib

    import rlpipe

    root = pathlib.Path(rlpipe.__file__).parent
    acting = [root / "middleware" / "_acting.py", root / "middleware" / "_acting_agents.py"]
    assert all(_env_step_calls(path) for path in acting)  # the search sees the real steps
    others = [call for path in sorted(root.rglob("*.py"))
              if path not in acting and root / "envs" not in path.parents
              for call in _env_step_calls(path)]
    assert others == []


def test_evaluating_inside_a_run_counts_no_env_steps_and_emits_no_episode_events():
    from rlpipe.middleware import evaluate_episodes

    env, ended = FakeEnvManager(n_envs=2, length=3), []
    with Task().start(ctx=OnlineRLContext()) as task:
        task.on("episode_end", ended.append)
        records = evaluate_episodes(FakeCollectPolicy(), env, 5)
        ctx = task.ctx
    assert [r["length"] for r in records] == [3] * 5
    assert ended == [] and ctx.env_step == 0 and ctx.env_episode == 0
    assert not ctx.episode_info and not ctx.trajectory_end_idx


def test_episode_quota_spreads_the_episodes_evenly_over_the_envs():
    from rlpipe.middleware import EpisodeQuota

    quota = EpisodeQuota(3, 7)  # 7 = 3 + 2 + 2: the first env owes the odd one
    assert [quota.take(0) for _ in range(4)] == [True, True, True, False]
    assert [quota.take(1) for _ in range(3)] == [True, True, False]
    assert quota.take(2) and quota.open()
    assert quota.take(2) and not quota.open()


def test_evaluation_restarts_do_not_count_and_every_env_gives_its_share():
    from rlpipe.middleware import evaluate_episodes

    env = FakeEnvManager(n_envs=2, length=3, crash_at={(0, 2)})  # env 0 restarts mid-episode
    policy = FakeCollectPolicy()
    assert len(evaluate_episodes(policy, env, 4)) == 4
    # env 0 lost 2 steps to the restart: 2 + 3 + 3 vector steps for its 2 episodes
    assert env.calls == 8
