"""SequenceAdder on hand-made step streams: burn-in windows, overlap, masks, start states."""
import numpy as np
import pytest

from rlpipe.data import SequenceAdder
from rlpipe.data._serialize import load_state, save_state


class Stream:
    """Step records for `n_envs` envs; env e runs episodes of lengths `lengths[e]` (cycled).

    obs of env e at its k-th step ever is e * 10_000 + k; "ep" numbers its episodes; the
    recorded state is [obs, -obs], zeros where the step is an episode's first (as the cursor
    records it)."""

    def __init__(self, lengths, truncate=False):
        self.lengths = [list(x) for x in lengths]
        self.n = len(lengths)
        self.k = np.zeros(self.n, np.int64)  # steps taken per env
        self.t = np.zeros(self.n, np.int64)  # step within the episode
        self.ep = np.zeros(self.n, np.int64)
        self.truncate = truncate

    def record(self, valid=None):
        obs = (np.arange(self.n) * 10_000 + self.k).astype(np.float32)
        length = np.array([ls[e % len(ls)] for ls, e in zip(self.lengths, self.ep)])
        first = self.t == 0
        end = self.t == length - 1
        state = np.where(first[:, None], 0.0, np.stack([obs, -obs], 1)).astype(np.float32)
        valid = np.ones(self.n, bool) if valid is None else np.asarray(valid)
        rec = {"obs": obs[:, None], "action": self.k.copy(), "reward": np.ones(self.n, np.float32),
               "next_obs": obs[:, None] + 1, "ep": self.ep.copy(), "first": first,
               "terminated": end & valid & (not self.truncate), "truncated": end & valid & self.truncate,
               "valid": valid, "state": {"h": state}}
        self.k += 1
        self.t = np.where(end | ~valid, 0, self.t + 1)
        self.ep += end | ~valid
        return rec


def collect(adder, stream, n_steps):
    out = [adder.add(stream.record()) for _ in range(n_steps)]
    return [s for s in out if s is not None]


def test_full_windows_overlap_by_length_minus_stride_and_keep_the_start_state():
    adder = SequenceAdder(seq_len=4, burn_in=2, stride=3, n_envs=1)  # L = 6
    seqs = collect(adder, Stream([[1000]]), 20)
    obs = np.concatenate([s["obs"][:, :, 0] for s in seqs])
    # windows start every stride steps and hold L consecutive steps
    assert obs[:, 0].tolist() == [0, 3, 6, 9, 12]
    np.testing.assert_array_equal(obs, obs[:, :1] + np.arange(6))
    # consecutive sequences share L - stride = 3 steps
    np.testing.assert_array_equal(obs[1:, :3], obs[:-1, 3:])
    for s in seqs:
        assert s["mask"].all() and s["obs"].shape == (1, 6, 1) and s["state"]["h"].shape == (1, 2)
        start = s["obs"][0, 0, 0]
        expected = [0.0, 0.0] if start == 0 else [start, -start]  # the row it starts at
        assert s["state"]["h"][0].tolist() == expected
        assert "valid" not in s
    assert seqs[0]["first"][0].tolist() == [True] + [False] * 5
    # the first sequence's steps are all new; later ones add stride new steps each
    assert [int(s["new_steps"][0]) for s in seqs] == [6, 3, 3, 3, 3]


def test_an_episode_end_closes_the_window_with_padding_and_the_next_opens_fresh():
    adder = SequenceAdder(seq_len=4, burn_in=2, stride=3, n_envs=1)
    seqs = collect(adder, Stream([[8, 7]], truncate=True), 15)
    obs = [s["obs"][0, :, 0].tolist() for s in seqs]
    mask = [s["mask"][0].tolist() for s in seqs]
    # episode 0 (steps 0..7): a full window, then the tail 3..7 padded
    assert obs[:2] == [[0, 1, 2, 3, 4, 5], [3, 4, 5, 6, 7, 0]]
    assert mask[1] == [True] * 5 + [False]
    assert seqs[1]["truncated"][0].tolist() == [False] * 4 + [True, False]
    assert seqs[1]["new_steps"][0] == 2
    # episode 1 (steps 8..14) starts a fresh window at its first step, with a zero state
    assert obs[2] == [8, 9, 10, 11, 12, 13] and seqs[2]["first"][0, 0]
    assert seqs[2]["state"]["h"][0].tolist() == [0.0, 0.0]
    assert obs[3] == [11, 12, 13, 14, 0, 0] and mask[3] == [True] * 4 + [False] * 2
    assert adder.pending == 0 and adder.dropped_steps == 0


def test_short_episodes_give_one_padded_sequence_and_burn_in_only_episodes_none():
    adder = SequenceAdder(seq_len=4, burn_in=2, stride=2, n_envs=1)
    seqs = collect(adder, Stream([[4, 2, 3]]), 9)  # episodes 0..3, 4..5, 6..8
    assert [s["obs"][0, :, 0].tolist() for s in seqs] == [[0, 1, 2, 3, 0, 0], [6, 7, 8, 0, 0, 0]]
    assert [s["mask"][0].sum() for s in seqs] == [4, 3]
    # padding is zeros, the last real step is the terminal one
    assert seqs[0]["terminated"][0].tolist() == [False, False, False, True, False, False]
    assert seqs[0]["action"][0, 4:].tolist() == [0, 0]
    # the 2-step episode is all burn-in: nothing to learn from, dropped and counted
    assert adder.dropped_steps == 2


@pytest.mark.parametrize("seq_len,burn_in,stride", [(5, 3, 2), (4, 0, 4), (6, 2, 6), (3, 1, 1)])
def test_sequences_never_cross_episodes_and_cover_every_learnable_step(seq_len, burn_in, stride):
    rng = np.random.default_rng(seq_len * 100 + stride)
    stream = Stream([rng.integers(1, 25, size=7).tolist() for _ in range(3)])
    adder = SequenceAdder(seq_len, burn_in, stride, n_envs=3)
    seqs, taken = [], []  # taken: (obs, step in its episode) of every step added
    for _ in range(300):
        t_in_ep = stream.t.copy()
        rec = stream.record()
        taken += list(zip(rec["obs"][:, 0].tolist(), t_in_ep.tolist()))
        out = adder.add(rec)
        if out is not None:
            seqs.append(out)
    learned = set()
    for s in seqs:
        for i in range(s["mask"].shape[0]):
            m = s["mask"][i]
            assert m[:m.sum()].all()  # real steps first, then padding
            ep, obs = s["ep"][i][m], s["obs"][i, :, 0][m]
            assert (ep == ep[0]).all()  # one episode per sequence
            np.testing.assert_array_equal(np.diff(obs), 1)  # consecutive steps of one env
            assert not s["first"][i][1:].any()  # an episode only starts at a sequence's start
            learned.update(obs[burn_in:].tolist())
    # every step is counted once: in a sequence's new_steps, dropped, or still open
    total_new = sum(int(s["new_steps"].sum()) for s in seqs)
    assert total_new + adder.dropped_steps + adder.pending == 3 * 300
    # stride <= seq_len: every step past its episode's burn-in, not still open, is learned on
    open_from = [e * 10_000 + 300 - int(adder._new[e]) for e in range(3)]
    for obs, t_in_ep in taken:
        if t_in_ep >= burn_in and obs < open_from[int(obs) // 10_000] and stride <= seq_len:
            assert obs in learned, obs


def test_invalid_rows_are_skipped_and_close_their_window():
    adder = SequenceAdder(seq_len=2, burn_in=1, stride=3, n_envs=2)
    stream = Stream([[100], [100]])
    out = [adder.add(stream.record()) for _ in range(2)]
    assert out == [None, None]
    seqs = adder.add(stream.record(valid=[True, False]))  # env 1 restarted
    # env 1's window closes, padded (its row is skipped); env 0's fills up
    assert seqs["obs"][:, :, 0].tolist() == [[10_000, 10_001, 0], [0, 1, 2]]
    assert seqs["mask"].tolist() == [[True, True, False], [True, True, True]]
    out = [adder.add(stream.record()) for _ in range(3)]
    assert out[:2] == [None, None]
    # env 1's new episode opens a fresh window at its first step, with a zero state
    assert out[2]["obs"][:, :, 0].tolist() == [[3, 4, 5], [10_003, 10_004, 10_005]]
    assert out[2]["first"][1].tolist() == [True, False, False]
    assert out[2]["state"]["h"].tolist() == [[3, -3], [0, 0]]


def test_resume_from_a_state_dict_is_exact(tmp_path):
    def run(adder, stream, n):
        return [adder.add(stream.record()) for _ in range(n)]

    lengths = [[9, 4, 13], [5, 30], [2, 2, 11]]
    straight, stream = SequenceAdder(4, 3, 2, 3), Stream(lengths)
    expected = run(straight, stream, 120)

    first, stream2 = SequenceAdder(4, 3, 2, 3), Stream(lengths)
    got = run(first, stream2, 47)
    assert first.pending > 0  # windows are open at the cut
    save_state(first.state_dict(), str(tmp_path / "adder.npz"))
    resumed = SequenceAdder(4, 3, 2, 3)
    resumed.load_state_dict(load_state(str(tmp_path / "adder.npz")))
    got += run(resumed, stream2, 73)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert (a is None) == (b is None)
        if a is not None:
            for key in ("obs", "mask", "first", "new_steps", "terminated"):
                np.testing.assert_array_equal(a[key], b[key])
            np.testing.assert_array_equal(a["state"]["h"], b["state"]["h"])
    assert resumed.dropped_steps == straight.dropped_steps
    with pytest.raises(ValueError, match="stride"):
        SequenceAdder(4, 3, 1, 3).load_state_dict(straight.state_dict())


def test_refusals_name_the_problem():
    with pytest.raises(ValueError, match="stride"):
        SequenceAdder(seq_len=4, burn_in=2, stride=7, n_envs=1)
    adder = SequenceAdder(4, 2, 2, n_envs=2)
    rec = Stream([[5], [5]]).record()
    with pytest.raises(KeyError, match="'state'"):
        adder.add({k: v for k, v in rec.items() if k != "state"})
    with pytest.raises(KeyError, match="'first'"):
        adder.add({k: v for k, v in rec.items() if k != "first"})
    with pytest.raises(ValueError, match="n_envs=2"):
        adder.add(Stream([[5]] * 3).record())
    adder.add(rec)
    with pytest.raises(KeyError, match="differ"):
        adder.add({**rec, "extra": np.zeros(2)})
