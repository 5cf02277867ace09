"""Crashing, dying and hanging envs are restarted; close() leaves no process behind."""

import logging
import os
import signal
import time
import warnings

import numpy as np
import pytest

from rlpipe.envs import EnvFailureError, EnvManager
from tests.envs.conftest import child_pids
from tests.envs.env_fakes import CountingEnv, FlakyEnv, ResetFailsOnceEnv

ZEROS = np.zeros(2, dtype=np.int64)


def flaky(fail_at=7, how="raise", length=50, only_seed=None):
    return lambda: FlakyEnv(fail_at=fail_at, how=how, length=length, only_seed=only_seed)


def warnings_of(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "rlpipe.envs"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_env_raising_on_its_7th_step_is_restarted(mode, caplog, no_leaked_children):
    caplog.set_level(logging.WARNING, logger="rlpipe.envs")
    with EnvManager(flaky(), n_envs=2, seed=0, mode=mode) as m:
        m.reset()
        results = [m.step(ZEROS) for _ in range(10)]
        assert m.restarts == 2  # both sub-envs failed on their 7th step
    bad = results[6]
    assert not bad.valid.any()
    assert all(r.valid.all() for r in results[:6] + results[7:])
    assert (bad.reward == 0).all() and not (bad.terminated | bad.truncated).any()
    # the row's obs is a fresh episode's first obs, and collection goes on from it
    np.testing.assert_array_equal(bad.obs[:, 0], [0, 0])
    np.testing.assert_array_equal(results[7].obs[:, 0], [1, 1])
    messages = warnings_of(caplog)
    assert len(messages) == 2
    assert "RuntimeError: boom on step 7" in messages[0] and "env_fakes.py" in messages[0]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_restart_keeps_the_other_envs_episodes(mode):
    # sub-env 0 (seed 0) fails on its 3rd step; sub-env 1 (seed 1) never fails
    with EnvManager(flaky(fail_at=3, only_seed=0), n_envs=2, seed=0, mode=mode) as m:
        m.reset()
        results = [m.step(ZEROS) for _ in range(5)]
        assert m.restarts == 1
    assert results[2].valid.tolist() == [False, True]
    assert [r.obs[1, 0] for r in results] == [1, 2, 3, 4, 5]  # env 1's episode went on
    assert [r.obs[0, 0] for r in results] == [1, 2, 0, 1, 2]


def test_episode_of_a_restarted_env_is_dropped_not_reported():
    def make(i=[0]):  # only the first instance fails
        i[0] += 1
        return FlakyEnv(fail_at=4 if i[0] == 1 else 10**9, length=6)

    with EnvManager(make, n_envs=1, seed=0, mode="sync") as m:
        m.reset()
        episodes = [e for _ in range(12) for e in m.step(np.zeros(1, dtype=np.int64)).episodes]
    # steps 1-3 then crash (dropped); the new instance runs 6 steps: one whole episode
    assert episodes == [{"env_id": 0, "return": 6.0, "length": 6}]


def test_failing_reset_is_restarted(caplog):
    caplog.set_level(logging.WARNING, logger="rlpipe.envs")
    ResetFailsOnceEnv.failed = False
    with EnvManager(ResetFailsOnceEnv, n_envs=2, seed=0, mode="sync") as m:
        obs = m.reset()
        assert m.restarts == 1
        assert obs.shape == (2, 2) and (obs[:, 0] == 0).all()
        assert m.step(ZEROS).valid.all()
    assert "ValueError: reset went wrong" in warnings_of(caplog)[0]


def test_restart_limit_raises():
    with EnvManager(flaky(fail_at=2), n_envs=1, seed=0, mode="sync", max_restarts=1) as m:
        m.reset()
        with pytest.raises(EnvFailureError, match="max_restarts=1"):
            for _ in range(10):
                m.step(np.zeros(1, dtype=np.int64))


def test_restart_limit_error_names_the_env_and_its_last_traceback():
    with EnvManager(flaky(fail_at=2), n_envs=1, seed=0, mode="sync", max_restarts=0) as m:
        m.reset()
        m.step(np.zeros(1, dtype=np.int64))
        with pytest.raises(EnvFailureError) as info:
            m.step(np.zeros(1, dtype=np.int64))
    err = info.value
    assert err.env_label == m.env_label and m.env_label in str(err)
    assert "RuntimeError: boom on step 2" in err.last_traceback
    assert "env_fakes.py" in err.last_traceback


def test_restarts_are_counted_within_the_window():
    # fails every 5th step of each instance: a restart every 5 manager steps
    with EnvManager(flaky(fail_at=5), n_envs=1, seed=0, mode="sync", max_restarts=2,
                    restart_window=10) as m:
        m.reset()
        for _ in range(60):  # 12 restarts in all, never more than 2 within 10 steps
            m.step(np.zeros(1, dtype=np.int64))
        assert m.restarts == 12 and m.recent_restarts() <= 2
    with EnvManager(flaky(fail_at=5), n_envs=1, seed=0, mode="sync", max_restarts=2,
                    restart_window=16) as m:  # 4 failures within 16 steps: more than 2
        m.reset()
        with pytest.raises(EnvFailureError, match="3 restarts within 16 steps"):
            for _ in range(60):
                m.step(np.zeros(1, dtype=np.int64))
        assert m.restarts == 3


def test_restart_window_must_be_a_positive_number_of_steps():
    with pytest.raises(ValueError, match="restart_window must be None or an int >= 1"):
        EnvManager(CountingEnv, restart_window=0)


def test_env_failure_error_keeps_its_details_through_pickle():
    import pickle

    err = EnvFailureError("env X: gave up", env_label="X", last_traceback="Traceback ...")
    back = pickle.loads(pickle.dumps(err))
    assert (str(back), back.env_label, back.last_traceback) == (str(err), "X", "Traceback ...")
    again = EnvFailureError(back)  # how gymnasium re-raises a worker's exception
    assert again.env_label == "X" and again.last_traceback == "Traceback ..."


def test_env_failing_right_after_every_restart_gives_up():
    with EnvManager(flaky(fail_at=1), n_envs=1, mode="sync") as m:
        m.reset()
        with pytest.raises(EnvFailureError, match="boom on step 1"):
            for _ in range(10):
                m.step(np.zeros(1, dtype=np.int64))


def test_restarted_envs_are_reseeded_reproducibly():
    def stream():
        with EnvManager(flaky(fail_at=5, length=50), n_envs=2, seed=3, mode="sync") as m:
            return np.stack([m.reset()] + [m.step(ZEROS).obs for _ in range(12)])

    a, b = stream(), stream()
    np.testing.assert_array_equal(a, b)
    assert len(np.unique(a[:, :, 1])) == 6  # 2 initial draws + 2 restarts x 2 envs


def test_async_worker_that_dies_is_rebuilt(caplog, no_leaked_children):
    caplog.set_level(logging.WARNING, logger="rlpipe.envs")
    with EnvManager(flaky(fail_at=3, how="exit"), n_envs=2, seed=0, mode="async") as m:
        m.reset()
        results = [m.step(ZEROS) for _ in range(5)]
        assert m.restarts == 1
    assert not results[2].valid.any()  # a whole rebuild: every row restarts
    assert all(r.valid.all() for r in results[3:])
    np.testing.assert_array_equal(results[4].obs[:, 0], [2, 2])
    assert "exit code 3" in warnings_of(caplog)[0]


def test_async_hanging_env_is_timed_out(caplog, no_leaked_children):
    caplog.set_level(logging.WARNING, logger="rlpipe.envs")
    with EnvManager(flaky(fail_at=3, how="hang"), n_envs=2, seed=0, mode="async",
                    step_timeout=0.5) as m:
        m.reset()
        start = time.monotonic()
        results = [m.step(ZEROS) for _ in range(4)]
        assert time.monotonic() - start < 10
        assert m.restarts == 1
    assert not results[2].valid.any() and results[3].valid.all()
    message = warnings_of(caplog)[0]
    assert "step_timeout=0.5" in message
    assert "env_fakes.py" in message and "in step" in message  # the hung env's own stack


def test_native_env_exception_rebuilds_it(monkeypatch, caplog):
    caplog.set_level(logging.WARNING, logger="rlpipe.envs")
    with EnvManager("CartPole-v1", n_envs=4, seed=0, mode="native") as m:
        m.reset()
        vec = m._backend._vec
        monkeypatch.setattr(vec, "step", lambda actions: 1 / 0)
        bad = m.step(np.zeros(4, dtype=np.int64))
        good = m.step(np.zeros(4, dtype=np.int64))
        assert m.restarts == 1
    assert not bad.valid.any() and good.valid.all()
    assert "ZeroDivisionError" in warnings_of(caplog)[0]


def test_close_after_failure_and_interrupt_leaves_no_process(no_leaked_children):
    with pytest.raises(KeyboardInterrupt):
        with EnvManager(flaky(fail_at=3, how="exit"), n_envs=2, seed=0, mode="async") as m:
            m.reset()
            for _ in range(4):
                m.step(ZEROS)
            workers = set(child_pids())
            assert workers
            for pid in workers:  # Ctrl-C reaches the whole process group
                os.kill(pid, signal.SIGINT)
            raise KeyboardInterrupt
    assert m.closed


def test_close_while_a_step_is_pending_leaves_no_process(no_leaked_children):
    m = EnvManager(flaky(fail_at=2, how="hang"), n_envs=2, mode="async")
    m.reset()
    m.step(ZEROS)
    m._backend._vec.step_async(ZEROS)  # workers now hang inside step()
    m.close()
    m.close()


def test_garbage_collected_manager_leaves_no_process(no_leaked_children):
    m = EnvManager(CountingEnv, n_envs=2, mode="async")
    m.reset()
    del m
    import gc

    gc.collect()


@pytest.mark.parametrize("how", ["raise", "exit"])
def test_async_env_failing_after_every_restart_gives_up(how, no_leaked_children):
    # gymnasium's AsyncVectorEnv reports a worker's exception as UserWarnings holding its
    # traceback; record them here (and check them) instead of printing them in the test run
    with warnings.catch_warnings(record=True) as caught, \
            EnvManager(flaky(fail_at=1, how=how), n_envs=2, mode="async") as m:
        warnings.simplefilter("always")
        m.reset()
        with pytest.raises(EnvFailureError) as info:
            for _ in range(10):
                m.step(ZEROS)
    assert info.value.env_label == m.env_label
    texts = [str(w.message) for w in caught]
    if how == "raise":
        assert "boom on step 1" in (info.value.last_traceback or "")
        assert any("Received the following error" in t for t in texts), texts
        assert any("boom on step 1" in t for t in texts), texts
