"""MultiAgentEnvManager on a hand-written parallel env (tests/marl/fake_env.py): exact checks."""
from __future__ import annotations

import functools

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from rlpipe.envs import MultiAgentEnvManager, UnknownEnvError  # noqa: E402
from tests.marl.fake_env import FakeParallel, make, make_aec  # noqa: E402

ONES = np.ones((2, 3), dtype=np.int64)


def run_episode(manager, actions=ONES):
    """Reset, then step with `actions` until every env's episode ended; the step results."""
    manager.reset()
    results = []
    while not results or not results[-1].episodes:
        results.append(manager.step(actions))
    return results


def test_shapes_spaces_and_agents():
    with MultiAgentEnvManager(make, n_envs=2, seed=0) as m:
        assert m.agents == ["a0", "a1", "a2"] and m.n_agents == 3
        assert m.observation_space.shape == (3,) and int(m.action_space.n) == 3
        assert m.state_space.shape == (3,)
        assert m.batch_action_space.sample().shape == (2, 3)
        obs = m.reset()
        assert obs.shape == (2, 3, 3) and m.agent_mask.shape == (2, 3) and m.agent_mask.all()
        assert m.global_state.shape == (2, 3) and m.action_mask is None
        np.testing.assert_array_equal(obs[:, :, 1], [[0, 1, 2], [0, 1, 2]])  # agent index


def test_dead_agent_is_masked_never_fabricated_and_never_sent_an_action():
    with MultiAgentEnvManager(make, n_envs=2, seed=0) as m:
        m.reset()
        first = m.step(ONES)
        assert first.agent_mask.all() and first.next_agent_mask.all() and not first.episodes
        np.testing.assert_array_equal(first.reward, [[1, 11, 21]] * 2)
        second = m.step(ONES)  # a1 terminates: its final observation is in next_obs
        np.testing.assert_array_equal(second.terminated, [[False, True, False]] * 2)
        np.testing.assert_array_equal(second.next_agent_mask, [[True, False, True]] * 2)
        np.testing.assert_array_equal(second.next_obs[:, 1, :2], [[2, 1]] * 2)
        assert not second.episodes  # autoreset only when every agent is done
        garbage = ONES.copy()
        garbage[:, 1] = -7  # a1's rows: ignored (the fake env raises on an action for a1)
        third = m.step(garbage)
        np.testing.assert_array_equal(third.agent_mask, [[True, False, True]] * 2)
        np.testing.assert_array_equal(third.reward, [[1, 0, 21]] * 2)
        assert not third.terminated[:, 1].any() and third.valid.all() and m.restarts == 0
        fourth = m.step(garbage)
        np.testing.assert_array_equal(fourth.truncated, [[True, False, True]] * 2)
        assert not fourth.next_agent_mask.any() and m.agent_mask.all()  # reset for the next one
        np.testing.assert_array_equal(fourth.next_obs[:, [0, 2], 0], [[4, 4]] * 2)  # true finals
        np.testing.assert_array_equal(fourth.obs[:, :, 0], np.zeros((2, 3)))  # next episode
        assert [e["env_id"] for e in fourth.episodes] == [0, 1]
        for episode in fourth.episodes:  # a0: 4 x 1, a1: 2 x 11, a2: 4 x 21
            assert episode["agent_returns"] == {"a0": 4.0, "a1": 22.0, "a2": 84.0}
            assert episode["return"] == pytest.approx(110.0) and episode["length"] == 4
        assert m.restarts == 0


def test_global_state_before_and_after_each_step():
    with MultiAgentEnvManager(make, n_envs=1, seed=3) as m:
        m.reset()
        noise = float(m.global_state[0, 2])
        steps = [m.step(ONES[:1]) for _ in range(4)]
        for t, step in enumerate(steps):
            assert step.global_state[0, :2].tolist() == [t, 3 if t < 2 else 2]
            assert step.next_global_state[0, :2].tolist() == [t + 1, [3, 2, 2, 0][t]]
            assert step.next_global_state[0, 2] == pytest.approx(noise)
        assert m.global_state[0, :2].tolist() == [0, 3]  # the autoreset episode's


def test_seeding_env_i_with_seed_plus_i_is_deterministic():
    def noises(seed):
        with MultiAgentEnvManager(make, n_envs=3, seed=seed) as m:
            return m.reset()[:, 0, 2]

    np.testing.assert_array_equal(noises(5), noises(5))
    assert not np.array_equal(noises(5), noises(6))
    expected = [np.random.default_rng(5 + i).random() for i in range(3)]
    np.testing.assert_allclose(noises(5), expected, rtol=1e-6)


@pytest.mark.parametrize("where", ["obs", "info"])
def test_action_masks_from_obs_or_info(where):
    with MultiAgentEnvManager(functools.partial(make, masks=where), n_envs=2, seed=0) as m:
        m.reset()
        assert m.action_mask.shape == (2, 3, 3)
        np.testing.assert_array_equal(m.action_mask[0], ~np.eye(3, dtype=bool))
        actions = np.array([[1, 0, 0]] * 2)  # valid for every agent
        m.step(actions)
        second = m.step(actions)
        np.testing.assert_array_equal(second.action_mask[0], ~np.eye(3, dtype=bool))
        assert m.action_mask[:, 1].all()  # a1 left: its row allows everything, unused
    with MultiAgentEnvManager(functools.partial(make, masks=where), n_envs=1,
                              action_masks=False) as m:
        m.reset()
        assert m.action_mask is None


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_crashing_env_is_restarted_and_its_row_is_not_valid(tmp_path, mode):
    factory = functools.partial(make, crash_file=str(tmp_path / "crashed"))
    with MultiAgentEnvManager(factory, n_envs=2, seed=0, mode=mode) as m:
        m.reset()
        m.step(ONES)
        crashed = m.step(ONES)  # the first env to reach t == 1 crashes once
        assert crashed.valid.sum() == 1 and m.restarts == 1
        bad = int(np.flatnonzero(~crashed.valid)[0])
        assert not crashed.agent_mask[bad].any() and crashed.agent_mask[1 - bad].all()
        assert not crashed.reward[bad].any() and m.agent_mask[bad].all()  # a fresh episode
        ends = [m.step(ONES) for _ in range(4)]
        good_end = [e for r in ends[:2] for e in r.episodes]
        assert [e["env_id"] for e in good_end] == [1 - bad]  # the other env goes on
        assert good_end[0]["agent_returns"] == {"a0": 4.0, "a1": 22.0, "a2": 84.0}
        restarted = [e for e in ends[3].episodes if e["env_id"] == bad]
        assert restarted and restarted[0]["length"] == 4  # counted from the restart


def test_aec_envs_are_converted_and_behave_as_parallel_ones():
    with MultiAgentEnvManager(make_aec, n_envs=2, seed=1) as aec, \
            MultiAgentEnvManager(make, n_envs=2, seed=1) as par:
        a, p = run_episode(aec), run_episode(par)
        assert len(a) == len(p) == 4
        for x, y in zip(a, p):
            np.testing.assert_array_equal(x.next_obs, y.next_obs)
            np.testing.assert_array_equal(x.agent_mask, y.agent_mask)
        assert a[-1].episodes == p[-1].episodes


def test_state_round_trip_gives_the_same_future():
    with MultiAgentEnvManager(make, n_envs=2, seed=0) as m:
        m.reset()
        m.step(ONES)
        saved = m.get_state()
        before = [m.step(ONES) for _ in range(4)]
        m.set_state(saved)
        after = [m.step(ONES) for _ in range(4)]
        for x, y in zip(before, after):
            np.testing.assert_array_equal(x.next_obs, y.next_obs)
            np.testing.assert_array_equal(x.agent_mask, y.agent_mask)
            assert x.episodes == y.episodes


def test_mistakes_are_named():
    with MultiAgentEnvManager(make, n_envs=2) as m:
        with pytest.raises(RuntimeError, match="before reset"):
            m.step(ONES)
        m.reset()
        with pytest.raises(ValueError, match=r"shape \[n_envs=2, n_agents=3"):
            m.step(np.ones(2, dtype=np.int64))
    with pytest.raises(ValueError, match="'sync' or 'async'"):
        MultiAgentEnvManager(make, mode="native")
    with pytest.raises(UnknownEnvError, match="no module"):
        MultiAgentEnvManager("mpe2/simple_sprad_v3")


def test_agents_with_different_shapes_are_refused_in_one_line():
    class Uneven(FakeParallel):
        def observation_space(self, agent):
            from gymnasium import spaces

            return spaces.Box(-1, 1, (3 if agent != "a2" else 4,), np.float32)

    with pytest.raises(ValueError, match="observation spaces differ") as info:
        MultiAgentEnvManager(Uneven)
    assert "a2: Box" in str(info.value)
