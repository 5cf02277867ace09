import numpy as np
import pytest

from rlpipe.envs import EnvManager


@pytest.mark.parametrize("mode", ["sync", "native"])
def test_restored_state_continues_the_same_stream(mode):
    rng = np.random.default_rng(0)
    actions = rng.integers(2, size=(300, 8))
    with EnvManager("CartPole-v1", n_envs=8, seed=3, mode=mode) as a:
        a.reset()
        for act in actions[:100]:
            a.step(act)
        state = a.get_state()
        rest_a = [a.step(act) for act in actions[100:]]
        random_a = a.action_space.sample()
    with EnvManager("CartPole-v1", n_envs=8, seed=99, mode=mode) as b:
        b.reset()
        b.set_state(state)
        rest_b = [b.step(act) for act in actions[100:]]
        random_b = b.action_space.sample()
    for ra, rb in zip(rest_a, rest_b):
        np.testing.assert_array_equal(ra.obs, rb.obs)
        np.testing.assert_array_equal(ra.next_obs, rb.next_obs)
        assert ra.episodes == rb.episodes
    assert random_a == random_b


def test_state_of_another_shape_is_refused():
    with EnvManager("CartPole-v1", n_envs=2, seed=0, mode="sync") as a, \
            EnvManager("CartPole-v1", n_envs=3, seed=0, mode="sync") as b:
        a.reset()
        b.reset()
        with pytest.raises(ValueError, match="2 envs in mode 'sync'"):
            b.set_state(a.get_state())


def test_a_native_state_saved_before_cartpole_starts_and_the_action_check_still_resumes():
    import pickle

    from rlpipe.envs import _native

    actions = np.random.default_rng(1).integers(2, size=(200, 8))
    with EnvManager("CartPole-v1", n_envs=8, seed=3, mode="native") as a:
        a.reset()
        for act in actions[:50]:
            a.step(act)
        state = pickle.loads(a.get_state())
    # what the previous version wrote: a plain function as the partial reset, no action check
    state["backend"]["_partial"] = _native._cartpole_partial_reset
    del state["backend"]["_check_actions"]
    old = pickle.dumps(state)
    runs = []
    for _ in range(2):
        with EnvManager("CartPole-v1", n_envs=8, seed=99, mode="native") as b:
            b.reset()
            b.set_state(old)
            runs.append([b.step(act) for act in actions[50:]])
            with pytest.raises(ValueError, match="expected 8 actions"):
                b.step(np.full(8, 2))
    assert sum(len(r.episodes) for r in runs[0]) > 10  # episodes ended and restarted
    for ra, rb in zip(*runs):  # and the resumed stream is reproducible
        np.testing.assert_array_equal(ra.obs, rb.obs)


def test_envs_saved_without_their_simulation_start_new_episodes_without_counting_failures():
    pytest.importorskip("Box2D")
    actions = np.zeros((40, 3), dtype=np.int64)
    with EnvManager("LunarLander-v3", n_envs=3, seed=5, mode="sync") as a:
        a.reset()
        for act in actions[:20]:
            a.step(act)
        state = a.get_state()  # Box2D's world cannot be pickled: the envs go as constructor calls
    runs = []
    for _ in range(2):
        with EnvManager("LunarLander-v3", n_envs=3, seed=99, mode="sync") as b:
            b.reset()
            b.set_state(state)
            first = b.step(actions[20])
            assert not first.valid.any() and first.episodes == []  # no made-up transition
            rest = [b.step(act) for act in actions[21:]]
            assert all(r.valid.all() for r in rest)
            assert b.restarts == 0  # new episodes, not crashed envs
            runs.append([first.obs] + [r.obs for r in rest])
    for x, y in zip(*runs):  # the new episodes are seeded: a resume is reproducible
        np.testing.assert_array_equal(x, y)
