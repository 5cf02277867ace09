"""rtgym interfaces as gymnasium envs: clock frequency, one-step action delay, overrun counts."""
import time

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("rtgym")
pytestmark = pytest.mark.filterwarnings("ignore:Time-step timed out")  # rtgym's, counted here

from rlpipe.envs import (EnvManager, PendulumInterface, make_realtime_env,  # noqa: E402
                         make_rtpendulum, realtime_overruns)
from rlpipe.middleware import overrun_meter  # noqa: E402
from rlpipe.contexts import OnlineRLContext  # noqa: E402

ZERO = np.zeros(1, dtype=np.float32)


def test_steps_at_the_configured_frequency():
    hz, steps = 25.0, 25  # about one second
    env = make_rtpendulum(hz=hz)
    try:
        env.reset(seed=0)
        t0 = time.perf_counter()
        for _ in range(steps):
            env.step(ZERO)
        period = (time.perf_counter() - t0) / steps
        stats = env.unwrapped.overrun_stats()
    finally:
        env.close()
    # never faster than the clock; slower only by what the overruns (if any) explain
    assert period >= 0.97 / hz, period
    assert period <= (1.15 + 2 * stats["overruns"] / steps) / hz, (period, stats)


def test_the_action_applies_from_the_next_time_step():
    env = make_rtpendulum(hz=50.0, flatten=False)  # obs: ([cos, sin, θ̇], action buffer)
    try:
        env.reset(seed=0, options={"state": (np.pi, 0.0)})  # hanging down, at rest
        push = np.array([2.0], dtype=np.float32)
        (state1, buf1), *_ = env.step(push)
        (state2, buf2), *_ = env.step(ZERO)
    finally:
        env.close()
    assert abs(state1[2]) < 1e-6, "the torque acted before its time step"
    assert np.allclose(buf1, push)  # the observation carries the action about to act
    assert state2[2] > 0.1, "the torque did not act during the next time step"
    assert np.allclose(buf2, ZERO)


def test_a_late_caller_is_counted_as_an_overrun():
    hz = 50.0
    env = make_rtpendulum(hz=hz, time_step_timeout_factor=1.0)
    try:
        env.reset(seed=0)
        for _ in range(5):
            env.step(ZERO)
        assert env.unwrapped.overrun_stats()["overruns"] == 0
        for _ in range(3):
            time.sleep(3.0 / hz)  # beyond the time step plus its elasticity
            *_, info = env.step(ZERO)
        env.step(ZERO)
        stats = env.unwrapped.overrun_stats()
    finally:
        env.close()
    assert stats["overruns"] >= 3, stats
    assert stats["max_late_s"] >= 1.0 / hz
    assert info["rt_overruns"] >= 2  # reported in the step's info too (counts so far)
    assert realtime_overruns()["overruns"] >= 3  # the process's totals keep closed envs


class SlowInterface(PendulumInterface):
    """Observation capture that takes three time steps."""

    def get_obs_rew_terminated_info(self):
        time.sleep(0.06)
        return super().get_obs_rew_terminated_info()


def test_a_slow_interface_is_counted_and_a_requested_pause_is_not():
    env = make_realtime_env(SlowInterface, flatten=True, time_step_duration=0.02,
                            start_obs_capture=0.02, ep_max_length=3, wait_on_done=True)
    try:
        env.reset(seed=0)
        for _ in range(3):
            *_, truncated, _ = env.step(ZERO)
        assert truncated
        slow = env.unwrapped.overrun_stats()["overruns"]
        time.sleep(0.1)  # paused by wait_on_done: not an overrun
        env.reset(seed=1)
        after_pause = env.unwrapped.overrun_stats()["overruns"]
    finally:
        env.close()
    assert slow >= 2
    assert after_pause == slow


def test_registered_id_and_interface_string_through_the_env_manager():
    kwargs = dict(interface="rlpipe.envs._rtpendulum:PendulumInterface", flatten=True,
                  interface_kwargs=dict(time_scale=2.5), time_step_duration=0.02,
                  start_obs_capture=0.02, ep_max_length=5)
    with EnvManager("rlpipe/RealTime-v0", n_envs=2, seed=0, mode="sync",
                    env_kwargs=kwargs) as manager:
        assert manager.observation_space.shape == (4,)  # [cos, sin, θ̇] + one action
        manager.reset()
        episodes = []
        for _ in range(5):
            episodes += manager.step(np.zeros((2, 1), dtype=np.float32)).episodes
    assert len(episodes) == 2 and all(e["length"] == 5 for e in episodes)


def test_config_errors_name_the_key():
    with pytest.raises(TypeError, match="time_step_duraton"):
        make_realtime_env(PendulumInterface, time_step_duraton=0.05)
    with pytest.raises(ValueError, match="module:ClassName"):
        make_realtime_env("PendulumInterface")
    with pytest.raises(TypeError, match="lacks the rtgym interface"):
        make_realtime_env(dict)


def test_overrun_meter_logs_the_rate_of_this_process():
    env = make_rtpendulum(hz=50.0)
    try:
        env.reset(seed=0)
        time.sleep(0.1)
        env.step(ZERO)
        env.step(ZERO)
        ctx = OnlineRLContext()
        overrun_meter()(ctx)
    finally:
        env.close()
    totals = realtime_overruns()
    assert ctx.info_for_logging["collect/overrun_rate"] == pytest.approx(
        totals["overruns"] / totals["time_steps"])
    assert ctx.info_for_logging["collect/overruns"] >= 1
    made = gym.make("rlpipe/RTPendulum-v0")
    try:
        assert made.unwrapped.overrun_stats()["time_steps"] == 0
    finally:
        made.close()


def test_rtpendulum_passes_gymnasiums_check_env_and_its_seeded_reset_repeats():
    """The env's own np_random is seeded by reset(seed=...) (rtgym seeds only the interface).
    A step depends on the wall clock, so the id is registered nondeterministic and check_env
    skips its observation comparisons: the seeded reset is compared here instead."""
    from gymnasium.utils.env_checker import check_env

    env = gym.make("rlpipe/RTPendulum-v0", hz=50.0, ep_max_length=50)
    try:
        with pytest.warns(UserWarning, match="different from the unwrapped"):
            check_env(env, skip_render_check=True)
        first, _ = env.reset(seed=123)
        rng = env.unwrapped.np_random.bit_generator.state
        env.reset(seed=7)
        assert env.unwrapped.np_random.bit_generator.state != rng
        again, _ = env.reset(seed=123)
        np.testing.assert_array_equal(first, again)
        assert env.unwrapped.np_random.bit_generator.state == rng
        assert env.spec.nondeterministic
    finally:
        env.close()
