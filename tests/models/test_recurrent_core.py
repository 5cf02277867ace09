"""RecurrentCore: reset-at-first over time, fused and stepwise paths agree, state layout."""
import pytest
import torch

from rlpipe.models import RecurrentCore
from rlpipe.models.recurrent import episode_segments


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


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_segmented_outputs_and_gradients_equal_the_step_loop(kind):
    """Without the final state, a chunk with resets inside runs as right-padded episode segments
    in one fused call: its outputs and its gradients are those of the step-by-step recurrence."""
    torch.manual_seed(1)
    core = RecurrentCore(3, 8, kind)
    x = torch.randn(3, 12, 3, requires_grad=True)
    state = {k: torch.randn(3, 8) for k in core.state_keys}  # a carried (non-zero) start state
    first = torch.zeros(3, 12, dtype=torch.bool)
    first[0, 0] = True                       # row 0 begins an episode at t = 0
    first[0, [4, 5, 11]] = True              # ... and at 4, 5 (a one-step episode) and 11
    first[2, 7] = True                       # row 2 carries its state, then resets at 7
    stepwise, after = core(x, state, first)  # the state is wanted: the step loop
    segmented, none = core(x, state, first, final_state=False)
    assert after is not None and none is None
    assert torch.allclose(segmented, stepwise, atol=1e-6)
    grads = [torch.autograd.grad(out.square().sum(), [x, *core.parameters()])
             for out in (stepwise, segmented)]
    for a, b in zip(*grads):
        assert torch.allclose(a, b, atol=1e-5)
    # the start state reaches the rows that do not begin with a reset, and only those
    zero = {k: torch.zeros_like(v) for k, v in state.items()}
    from_zero, _ = core(x, zero, first, final_state=False)
    assert torch.allclose(from_zero[0], segmented[0], atol=1e-6)
    assert not torch.allclose(from_zero[1], segmented[1], atol=1e-4)


def test_cores_over_the_same_rows_share_one_layout_and_padded_input():
    """An LSTM and a GRU over the same rows: one `episode_segments` layout and one padded input
    give each core the outputs of its own segmented call, bit for bit, and of the step loop."""
    torch.manual_seed(2)
    x = torch.randn(3, 12, 3)
    first = torch.zeros(3, 12, dtype=torch.bool)
    first[0, [0, 4, 5, 11]] = True
    first[2, 7] = True
    segments = episode_segments(first)
    assert segments.longest == 12 and segments.row.tolist() == [0, 0, 0, 0, 1, 2, 2]
    assert segments.keep.squeeze(1).tolist() == [0, 0, 0, 0, 1, 1, 0]
    padded = segments.pad(x)
    assert padded.shape == (7, 12, 3) and torch.equal(segments.unpad(padded), x.reshape(36, 3))
    for kind in ("lstm", "gru"):
        core = RecurrentCore(3, 8, kind)
        state = {k: torch.randn(3, 8) for k in core.state_keys}
        shared = core.over_segments(padded, state, segments).reshape(3, 12, 8)
        own, _ = core(x, state, first, final_state=False)
        assert torch.equal(shared, own)
        stepwise, _ = core(x, state, first)
        assert torch.allclose(shared, stepwise, atol=1e-6)
    resets_at_zero_only = torch.zeros(3, 12, dtype=torch.bool)
    resets_at_zero_only[1, 0] = True
    assert episode_segments(resets_at_zero_only) is None  # the rows are the segments


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
