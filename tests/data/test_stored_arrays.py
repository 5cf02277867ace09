"""A buffer saves from its own arrays and loads by reading the file straight into them (no
second copy of gigabytes of frames in memory)."""
import io

import numpy as np
import pytest

from rlpipe.data import FrameReplayBuffer, ReplayBuffer, SequenceReplayBuffer
from rlpipe.data import _replay, _sequence_replay
from rlpipe.data._serialize import StoredArray, fill, load_state, save_state

from .test_frames import Streams, same


def _state():
    rng = np.random.default_rng(0)
    return {"rows": {"obs": rng.random((7, 3), dtype=np.float32),
                     "done": rng.random(7) < 0.5},
            "fortran": np.asfortranarray(rng.integers(0, 9, (4, 5))),
            "empty": np.zeros((0, 2), np.int16), "scalar": np.array(3.5),
            "meta": {"size": 7, "name": "x"}}


def test_a_lazy_state_reads_back_as_the_eager_one(tmp_path):
    path = str(tmp_path / "s.npz")
    save_state(_state(), path)
    eager, lazy = load_state(path), load_state(path, lazy=True)
    assert lazy["meta"] == eager["meta"] == {"size": 7, "name": "x"}
    for keys in (("rows", "obs"), ("rows", "done"), ("fortran",), ("empty",), ("scalar",)):
        a, b = eager, lazy
        for k in keys:
            a, b = a[k], b[k]
        assert isinstance(b, StoredArray) and (b.shape, b.dtype) == (a.shape, a.dtype)
        np.testing.assert_array_equal(np.asarray(b), a, err_msg=str(keys))
    assert len(lazy["rows"]["obs"]) == 7 and lazy["rows"]["obs"].nbytes == 7 * 3 * 4


def test_fill_streams_a_matching_target_and_converts_another(tmp_path):
    path = str(tmp_path / "s.npz")
    save_state(_state(), path)
    lazy, eager = load_state(path, lazy=True), load_state(path)
    out = np.full((10, 3), -1, np.float32)
    fill(out[:7], lazy["rows"]["obs"])
    np.testing.assert_array_equal(out[:7], eager["rows"]["obs"])
    assert (out[7:] == -1).all()
    wider = np.zeros((7, 3), np.float64)  # another dtype: read whole, then cast
    fill(wider, lazy["rows"]["obs"])
    np.testing.assert_allclose(wider, eager["rows"]["obs"])
    with pytest.raises(ValueError, match="shape .*pass an array of the stored shape"):
        lazy["rows"]["obs"].read_into(np.zeros((6, 3), np.float32))


def test_a_file_that_is_not_a_state_is_refused(tmp_path):
    np.savez(tmp_path / "other.npz", a=np.arange(3))
    with pytest.raises(ValueError, match="not an rlpipe state file"):
        load_state(str(tmp_path / "other.npz"), lazy=True)


class _Reads:
    """Records which stored arrays were read whole (np.asarray) and which streamed."""

    def __init__(self, monkeypatch):
        self.whole, self.streamed = [], []
        as_array, read_into = StoredArray.__array__, StoredArray.read_into

        def whole(array, *args, **kwargs):
            self.whole.append(array.nbytes)
            return as_array(array, *args, **kwargs)

        def streamed(array, out):
            self.streamed.append(array.nbytes)
            return read_into(array, out)

        monkeypatch.setattr(StoredArray, "__array__", whole)
        monkeypatch.setattr(StoredArray, "read_into", streamed)


def test_a_frame_buffer_load_streams_its_frames_and_rows(tmp_path, monkeypatch):
    env = Streams(3, seed=5)
    frames = FrameReplayBuffer(300, seed=1, lookback=8)
    for _ in range(40):
        frames.push(env.batch(3))
    frames.save(str(tmp_path / "frames.npz"))
    pool_bytes = frames._storage.pool.high_water * frames._storage.pool.frames[0].nbytes
    reads = _Reads(monkeypatch)
    again = FrameReplayBuffer(300, seed=7, lookback=8)
    again.load(str(tmp_path / "frames.npz"))
    assert pool_bytes in reads.streamed  # the frames went straight into the pool
    # read whole: only the rows' frame indices (int32, 2 stacks of 4), which become counts
    assert reads.whole == [len(frames) * 2 * 4 * 4]
    every = np.arange(len(frames))
    same(frames._storage.read(every), again._storage.read(every))
    same(frames.sample(16), again.sample(16))


@pytest.mark.parametrize("kind", ["replay", "sequence"])
def test_plain_buffers_stream_their_rows_and_load_from_an_open_file(tmp_path, monkeypatch, kind):
    rng = np.random.default_rng(3)
    if kind == "replay":
        buf = ReplayBuffer(64, seed=0)
        buf.push({"obs": rng.random((50, 4, 4), dtype=np.float32), "action": rng.integers(0, 3, 50)})
        again = ReplayBuffer(64, seed=5)
    else:
        buf = SequenceReplayBuffer(16, seq_len=3, burn_in=1, seed=0)
        buf.push({"obs": rng.random((12, 4, 8), dtype=np.float32), "action": rng.integers(0, 3, (12, 4)),
                  "mask": np.ones((12, 4), bool), "state": rng.random((12, 6), dtype=np.float32)})
        again = SequenceReplayBuffer(16, seq_len=3, burn_in=1, seed=5)
    buf.save(str(tmp_path / "b.npz"))
    reads = _Reads(monkeypatch)
    with open(tmp_path / "b.npz", "rb") as f:  # a file object as well as a path
        again.load(io.BytesIO(f.read()))
    assert reads.streamed and not reads.whole
    same(buf.sample(8), again.sample(8))


def _arrays(tree):
    if isinstance(tree, dict):
        return [a for v in tree.values() for a in _arrays(v)]
    return [tree] if isinstance(tree, np.ndarray) else []


@pytest.mark.parametrize("kind", ["replay", "frames", "sequence"])
def test_save_writes_the_buffers_own_arrays_not_copies(tmp_path, monkeypatch, kind):
    rng = np.random.default_rng(4)
    if kind == "replay":
        buf = ReplayBuffer(32, seed=0)
        buf.push({"obs": rng.random((20, 6), dtype=np.float32), "action": rng.integers(0, 3, 20)})
        held = buf._storage.arrays
    elif kind == "frames":
        buf = FrameReplayBuffer(32, seed=0)
        buf.push(Streams(2, seed=1).batch(5))
        held = {"frames": buf._storage.pool.frames, **buf._storage.arrays}
    else:
        buf = SequenceReplayBuffer(8, seq_len=3, burn_in=1, seed=0)
        buf.push({"obs": rng.random((6, 4, 5), dtype=np.float32), "mask": np.ones((6, 4), bool),
                  "state": rng.random((6, 2), dtype=np.float32)})
        held = buf._buffer._storage.arrays
    written = []
    for module in (_replay, _sequence_replay):
        monkeypatch.setattr(module, "save_state", lambda state, path: written.append(state))
    buf.save(str(tmp_path / "b.npz"))
    arrays = _arrays(written[0])
    for name, own in held.items():
        assert any(np.shares_memory(a, own) for a in arrays), name
