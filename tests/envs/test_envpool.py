"""EnvManager(mode="envpool"): EnvPool's NEXT_STEP autoreset normalised to rlpipe's step result."""

import numpy as np
import pytest

envpool = pytest.importorskip("envpool", reason="EnvPool is not installed (pip install rlpipe[envpool])")

from rlpipe.envs import EnvManager  # noqa: E402
from rlpipe.envs._envpool import ATARI_PRESETS  # noqa: E402

SHORT = {"max_episode_steps": 60}  # Pong episodes cut short, so tests see many episode ends


def run(manager, actions):
    manager.reset()
    return [manager.step(a) for a in actions]


def actions_for(n_steps, n_envs, n_actions=6, seed=0):
    return np.random.default_rng(seed).integers(0, n_actions, size=(n_steps, n_envs))


def test_no_pseudo_steps_every_step_is_real():
    n, steps = 3, 150
    with EnvManager("ALE/Pong-v5", n_envs=n, seed=0, mode="envpool", env_kwargs=SHORT) as m:
        results = run(m, actions_for(steps, n))
    # EnvPool counts each env's real steps in the episode; a pseudo-step would show 0
    elapsed = np.stack([r.infos["elapsed_step"] for r in results])
    assert (elapsed >= 1).all()
    lengths = [e["length"] for r in results for e in r.episodes]
    assert lengths == [60] * (n * (steps // 60))  # truncated after 60 counted steps, all real
    assert all(r.valid.all() for r in results)


def test_true_final_obs_differs_from_reset_obs_and_matches_a_single_env():
    n, steps = 2, 70
    acts = actions_for(steps, n)
    with EnvManager("ALE/Pong-v5", n_envs=n, seed=3, mode="envpool", env_kwargs=SHORT) as m:
        results = run(m, acts)
    end = results[59]
    assert sorted(e["env_id"] for e in end.episodes) == [0, 1]
    assert end.truncated.all() and not (end.next_obs == end.obs).all(axis=(1, 2, 3)).any()
    # env 1 alone (EnvPool seeds sub-env i with seed + i): its 60th observation is the final one
    ref = envpool.make("Pong-v5", env_type="gymnasium", num_envs=1, seed=4,
                       **{**ATARI_PRESETS["eval"], **SHORT})
    first, _ = ref.reset()
    for a in acts[:60, 1]:
        final, *_ = ref.step(np.array([a], dtype=np.int32))
    np.testing.assert_array_equal(end.next_obs[1], final[0])
    pseudo, *_ = ref.step(np.zeros(1, dtype=np.int32))  # EnvPool's autoreset step
    np.testing.assert_array_equal(end.obs[1], pseudo[0])  # the next episode's first obs
    np.testing.assert_array_equal(results[0].next_obs[1], results[0].obs[1])  # mid-episode


def reference_returns(task, seed, n, acts, options):
    """Each sub-env alone, EnvPool's own way: after a step that ends (a life or the game), one
    pseudo-step whose action is ignored; a return sums the game's points until game over."""
    returns = []
    for i in range(n):
        env = envpool.make(task, env_type="gymnasium", num_envs=1, seed=seed + i, **options)
        env.reset()
        total = 0.0
        for a in acts[:, i]:
            _, _, terminated, truncated, info = env.step(np.array([a], dtype=np.int32))
            total += float(info["reward"][0])
            if terminated[0] or truncated[0]:
                env.step(np.zeros(1, dtype=np.int32))  # the pseudo-step: reset / next life
                if truncated[0] or info["terminated"][0]:
                    returns.append((i, total))
                    total = 0.0
        env.close()
    return sorted(returns)


def test_episode_returns_equal_a_reference_loop():
    n, steps = 3, 200
    acts = actions_for(steps, n)
    with EnvManager("ALE/Pong-v5", n_envs=n, seed=7, mode="envpool",
                    env_kwargs={"max_episode_steps": 90}) as m:
        got = sorted((e["env_id"], e["return"]) for r in run(m, acts) for e in r.episodes)
    want = reference_returns("Pong-v5", 7, n, acts, {**ATARI_PRESETS["eval"],
                                                     "max_episode_steps": 90})
    assert got == want and any(ret != 0 for _, ret in got)


def test_train_preset_clips_rewards_but_reports_the_game_score_over_all_lives():
    n, steps = 2, 400
    acts = actions_for(steps, n)
    kwargs = {"atari_preset": "train", "max_episode_steps": 300}
    with EnvManager("ALE/SpaceInvaders-v5", n_envs=n, seed=1, mode="envpool",
                    env_kwargs=kwargs) as m:
        results = run(m, acts)
    rewards = np.stack([r.reward for r in results])
    assert set(np.unique(rewards)) <= {-1.0, 0.0, 1.0}
    life_lost = [r for r in results if r.terminated.any() and not r.episodes]
    assert life_lost  # a lost life ends the transition, not the episode
    got = sorted((e["env_id"], e["return"]) for r in results for e in r.episodes)
    options = {**ATARI_PRESETS["train"], "max_episode_steps": 300}
    assert got == reference_returns("SpaceInvaders-v5", 1, n, acts, options)
    assert max(ret for _, ret in got) > 1  # unclipped points, not clipped rewards


def test_seeding_is_deterministic_and_a_reseed_replays():
    acts = actions_for(70, 2)

    def observations(seed):
        with EnvManager("ALE/Pong-v5", n_envs=2, seed=seed, mode="envpool", env_kwargs=SHORT) as m:
            return np.stack([r.obs for r in run(m, acts)])

    a, b, c = observations(11), observations(11), observations(12)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    with EnvManager("ALE/Pong-v5", n_envs=2, seed=12, mode="envpool", env_kwargs=SHORT) as m:
        run(m, acts[:30])
        m.reset(seed=11)
        np.testing.assert_array_equal(np.stack([m.step(x).obs for x in acts]), a)


def test_get_state_is_refused_and_modes_are_checked():
    with EnvManager("ALE/Pong-v5", n_envs=1, seed=0, mode="envpool") as m:
        assert m.observation_space.shape == (4, 84, 84)
        with pytest.raises(NotImplementedError, match="EnvPool cannot snapshot"):
            m.get_state()
        m.reset()
        with pytest.raises(ValueError, match="expected 1 actions"):
            m.step(np.array([6]))
    with EnvManager("atari-pong", n_envs=2) as m:
        assert m.mode == "envpool"  # auto: an Atari short name runs in EnvPool when installed
    with pytest.raises(ValueError, match="not an Atari game"):
        EnvManager("CartPole-v1", mode="envpool")
    with pytest.raises(ValueError, match="atari_preset"):
        EnvManager("ALE/Pong-v5", mode="envpool", env_kwargs={"atari_preset": "paper"})
