"""task.profile(): per-middleware counts and times, iterations, wall time, overlap."""
import time

from rlpipe.engine import Profile, Task, contract


def slow(ctx):
    time.sleep(0.01)


def fast(ctx):
    yield


def test_profile_counts_times_and_table():
    t = Task()
    with t.start():
        t.use(slow).use(fast)
        t.run(max_step=5)
    p = t.profile()
    assert isinstance(p, Profile) and not p.async_mode
    assert p.iterations == 5
    assert [m.name for m in p.middleware] == ["slow", "fast"]
    assert [m.count for m in p.middleware] == [5, 5]
    assert p.middleware[0].total_s >= 0.05 and abs(p.middleware[0].mean_s - 0.01) < 0.01
    assert p.middleware[1].total_s < p.middleware[0].total_s
    assert p.wall_s >= p.busy_s and 0.5 < p.overlap <= 1.0
    assert abs(p.wall_per_iteration_s - p.wall_s / 5) < 1e-12
    table = str(p)
    lines = table.splitlines()
    assert lines[0].split() == ["#", "middleware", "calls", "total", "mean"]
    assert lines[1].split()[:3] == ["0", "slow", "5"] and "ms" in lines[1]
    assert "5 iterations (sync)" in table and "per iteration" in table and "overlap" in table


def test_profile_resets_at_start_and_survives_stop():
    t = Task()
    with t.start():
        t.use(fast)
        t.run(max_step=3)
    assert t.profile().iterations == 3  # still readable after the with block
    with t.start():
        t.use(fast)
        assert t.profile().iterations == 0 and t.profile().middleware[0].count == 0
        t.run(max_step=2)
    assert t.profile().iterations == 2


def test_async_profile_reports_overlap():
    t = Task()
    with t.start(async_mode=True):
        t.use(contract(writes=("obs",))(slow)).use(contract(writes=("action",))(slow))
        t.run(max_step=5)
    p = t.profile()
    assert p.async_mode and p.overlap > 1.3
    assert "(async)" in str(p)


def test_empty_profile_prints():
    p = Task().profile()
    assert p.iterations == 0 and p.overlap == 0.0 and p.wall_per_iteration_s == 0.0
    assert "0 iterations" in str(p)
