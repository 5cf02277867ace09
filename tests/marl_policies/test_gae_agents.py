"""GAE with an agent axis ([T, n, A]): an agent that dies mid-rollout, truncation bootstraps,
an agent that leaves without an end of its own, against hand computations."""
import numpy as np
import pytest

from rlpipe.data import RolloutStorage
from rlpipe.middleware.onpolicy import rollout_to_batch

G, L = 0.9, 0.8


def _step(reward, value, term, trunc, mask, next_obs, next_mask=None):
    row = lambda x, dt=np.float32: np.asarray([x], dt)  # noqa: E731  (one env)
    return dict(obs=np.zeros((1, 2, 1), np.float32), action=np.zeros((1, 2), np.int64),
                reward=row(reward), value=row(value), terminated=row(term, bool),
                truncated=row(trunc, bool), agent_mask=row(mask, bool),
                next_agent_mask=row(mask if next_mask is None else next_mask, bool),
                next_obs=np.asarray(next_obs, np.float32).reshape(1, 2, 1),
                global_state=np.zeros((1, 3), np.float32),
                next_global_state=np.full((1, 3), float(next_obs[0]), np.float32),
                valid=np.ones(1, bool))


class _V:
    """V(next obs) = 10 · obs per agent; records what each call was given."""

    def __init__(self):
        self.calls = []

    def __call__(self, obs, global_state=None, agent_mask=None):
        self.calls.append((obs.shape, global_state, agent_mask))
        assert global_state is not None and agent_mask is not None
        return 10.0 * obs[..., 0]


def test_agent_dying_mid_rollout_against_hand_computation():
    steps = [
        _step([1.0, 2.0], [0.5, 0.3], [0, 0], [0, 0], [1, 1], [0.0, 0.0]),
        _step([0.0, 1.0], [0.4, 0.2], [0, 1], [0, 0], [1, 1], [0.0, 0.7], [1, 1]),
        # agent 1 is gone: its reward/value are junk that must not count
        _step([1.0, 99.0], [0.6, 77.0], [0, 0], [1, 0], [1, 0], [0.3, 0.0], [1, 0]),
        _step([0.5, 0.5], [0.1, 0.2], [0, 0], [0, 0], [1, 1], [0.2, 0.4]),
    ]
    v = _V()
    batch = rollout_to_batch(steps, G, L, v)
    adv = batch["adv"]
    assert adv.shape == (4, 2)
    # agent 0: truncated at t2 (bootstrap V(final obs) = 3.0), last step bootstraps V = 2.0
    a3 = 0.5 + G * 2.0 - 0.1
    a2 = 1.0 + G * 3.0 - 0.6
    a1 = 0.0 + G * 0.6 - 0.4 + G * L * a2
    a0 = 1.0 + G * 0.4 - 0.5 + G * L * a1
    np.testing.assert_allclose(adv[:, 0], [a0, a1, a2, a3], rtol=1e-5)
    # agent 1: terminated at t1 (no bootstrap), absent at t2, a new episode at t3
    b3 = 0.5 + G * 4.0 - 0.2
    b1 = 1.0 - 0.2
    b0 = 2.0 + G * 0.2 - 0.3 + G * L * b1
    np.testing.assert_allclose(adv[:, 1], [b0, b1, 0.0, b3], rtol=1e-5)
    np.testing.assert_allclose(batch["return"][[0, 1, 3], 1], [b0 + 0.3, b1 + 0.2, b3 + 0.2],
                               rtol=1e-5)
    # one value call over the env rows t2 and t3, given the next global state and agent mask
    assert len(v.calls) == 1
    shape, state, mask = v.calls[0]
    assert shape == (2, 2, 1)
    np.testing.assert_allclose(state[:, 0], [0.3, 0.2], rtol=1e-6)
    np.testing.assert_array_equal(mask, [[True, False], [True, True]])
    assert "next_agent_mask" not in batch and "next_global_state" not in batch


def test_agent_leaving_without_an_end_bootstraps_from_its_next_obs():
    steps = [
        _step([1.0, 1.0], [0.5, 0.5], [0, 0], [0, 0], [1, 1], [0.1, 0.2]),
        _step([1.0, 5.0], [0.5, 9.0], [0, 0], [0, 0], [1, 0], [0.1, 0.0]),
    ]
    adv = rollout_to_batch(steps, G, L, _V())["adv"]
    np.testing.assert_allclose(adv[0, 1], 1.0 + G * 2.0 - 0.5, rtol=1e-5)
    np.testing.assert_allclose(adv[0, 0], 1.0 + G * 0.5 - 0.5 + G * L * adv[1, 0], rtol=1e-5)


def test_value_fn_with_the_wrong_number_of_values_is_named():
    steps = [_step([1.0, 1.0], [0.5, 0.5], [0, 0], [0, 0], [1, 1], [0.1, 0.2])]
    store = RolloutStorage.from_steps(steps)
    with pytest.raises(ValueError, match=r"shape \[rows, 2\]"):
        store.compute(G, L, lambda obs, **kw: np.zeros(obs.shape[0]))
