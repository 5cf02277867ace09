"""RecurrentCore: reset-at-first over time, fused and stepwise paths agree, state layout."""
import pytest
import torch

from rlpipe.models import RecurrentCore


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_sequence_equals_steps_and_resets_at_first(kind):
    torch.manual_seed(0)
    core = RecurrentCore(3, 8, kind)
    x = torch.randn(4, 10, 3)
    first = torch.zeros(4, 10, dtype=torch.bool)
    first[:, 0] = True
    first[1, 5] = True
    out, _ = core(x, core.initial_state(4), first)
    state, steps = core.initial_state(4), []
    for t in range(10):
        o, state = core.step(x[:, t], state, first[:, t])
        steps.append(o)
    assert torch.allclose(torch.stack(steps, 1), out, atol=1e-6)
    # row 1 from t=5 on equals a fresh run of x[1, 5:] from zeros: the state was reset there
    fresh, _ = core(x[1:2, 5:], core.initial_state(1), first[0:1, :5])
    assert torch.allclose(out[1:2, 5:], fresh, atol=1e-6)
    # without the reset the outputs differ (the state carried over)
    carried, _ = core(x[1:2], core.initial_state(1), first[0:1])
    assert not torch.allclose(carried[:, 5:], fresh, atol=1e-4)


def test_state_is_carried_when_not_first():
    core = RecurrentCore(2, 4, "lstm")
    x = torch.randn(2, 6, 2)
    no_first = torch.zeros(2, 6, dtype=torch.bool)
    whole, _ = core(x, core.initial_state(2), no_first)
    head, state = core(x[:, :3], core.initial_state(2), no_first[:, :3])
    tail, _ = core(x[:, 3:], state, no_first[:, 3:])
    assert torch.allclose(torch.cat([head, tail], 1), whole, atol=1e-6)
    assert set(core.initial_state(5)) == {"h", "c"} and core.initial_state(5)["h"].shape == (5, 4)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="kind"):
        RecurrentCore(2, 4, "rnn")
    core = RecurrentCore(2, 4, "gru")
    with pytest.raises(KeyError, match="lacks"):
        core(torch.zeros(1, 2, 2), {}, torch.zeros(1, 2, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"\[B, T, D\]"):
        core(torch.zeros(1, 2), core.initial_state(1), torch.zeros(1, 2, dtype=torch.bool))
