"""Atari lives on both backends: FIRE after resets and lost lives (a policy that never fires ends
its game), the "train" preset's clipped rewards and life-loss transitions, and episode reports
that stay those of whole games (real score, every life)."""
import functools
import importlib.util

import numpy as np
import pytest

from rlpipe.envs import EnvManager
from rlpipe.envs._registry import _make_atari

needs_ale = pytest.mark.skipif(importlib.util.find_spec("ale_py") is None,
                               reason='ale-py not installed: pip install "rlpipe[atari]"')
MODES = ["sync", pytest.param("envpool", marks=pytest.mark.skipif(
    importlib.util.find_spec("envpool") is None, reason="EnvPool is not installed"))]


def play(manager, actions):
    manager.reset()
    return [manager.step(a) for a in actions]


@needs_ale
@pytest.mark.parametrize("preset", ["eval", "train"])
@pytest.mark.parametrize("mode", [*MODES, "async"])
def test_a_policy_that_never_fires_ends_its_breakout_game(mode, preset):
    if mode == "async" and preset == "eval":
        pytest.skip("one async run is enough: it reads ended rows from final_info like sync")
    n = 2
    # 5 lives, each served by FIRE and lost: about 25 steps a life; without FIRE 27,000 steps
    with EnvManager("atari-breakout", n_envs=n, seed=0, mode=mode,
                    env_kwargs={"atari_preset": preset}) as m:
        results = play(m, np.zeros((400, n), dtype=np.int64))
    episodes = [e for r in results for e in r.episodes]
    first = {}
    for e in episodes:
        first.setdefault(e["env_id"], e)
    assert sorted(first) == [0, 1] and all(e["length"] <= 200 for e in first.values())
    assert all(e["return"] == 0.0 for e in episodes)
    steps_to_first_end = max(e["length"] for e in first.values())
    ended = np.stack([r.terminated for r in results[:steps_to_first_end]]).sum(axis=0)
    if preset == "train":  # each lost life ended a transition, and only the last an episode
        assert (ended == 5).all(), ended
    else:
        assert (ended == 1).all(), ended


@needs_ale
@pytest.mark.parametrize("mode", MODES)
def test_train_clips_rewards_and_ends_transitions_at_lost_lives_but_reports_whole_games(mode):
    n, steps = 2, 450
    actions = np.random.default_rng(0).integers(0, 6, size=(steps, n))
    if mode == "sync":  # SpaceInvaders (5 to 200 points a hit) as an atari-* short name would be
        env, cut = (functools.partial(_make_atari, "ALE/SpaceInvaders-v5"),
                    {"max_num_frames_per_episode": 4 * 400})
    else:  # EnvPool takes an ALE id's kwargs as its options
        env, cut = "ALE/SpaceInvaders-v5", {"max_episode_steps": 400}
    runs = {}
    for preset in ("eval", "train"):
        with EnvManager(env, n_envs=n, seed=3, mode=mode,
                        env_kwargs={"atari_preset": preset, **cut}) as m:
            runs[preset] = play(m, actions)
    real = np.stack([r.reward for r in runs["eval"]])
    clipped = np.stack([r.reward for r in runs["train"]])
    assert real.max() > 1  # the game scores more than 1 point at a time...
    np.testing.assert_array_equal(clipped, np.sign(real))  # ...and the learner sees its sign
    # the same games (same seeds and actions; FIRE and lives are played alike in both presets),
    # reported alike: real points summed over every life
    episodes = [e for r in runs["eval"] for e in r.episodes]
    assert [e for r in runs["train"] for e in r.episodes] == episodes
    assert len(episodes) >= n and max(e["return"] for e in episodes) > 1
    lost = sum(int(r.terminated.sum()) for r in runs["train"])
    over = sum(int(r.terminated.sum()) for r in runs["eval"])
    assert lost > over  # lost lives ended transitions in train, never in eval
