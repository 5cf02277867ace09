"""FrameReplayBuffer: each frame stored once, stacks rebuilt equal to a plain ReplayBuffer's (issue #18)."""
import numpy as np
import pytest

from rlpipe.data import (FrameReplayBuffer, NStepAccumulator, PrioritizedFrameReplayBuffer, PrioritizedReplayBuffer,
                         ReplayBuffer)

K = 4


class Streams:
    """`n_envs` envs stacking K random [6, 5] frames, reset frame repeated at episode starts (as
    gymnasium's FrameStackObservation pads); episodes of random lengths end terminated or truncated."""

    def __init__(self, n_envs, seed, channels_last=False):
        self.rng = np.random.default_rng(seed)
        self.n, self.last = n_envs, channels_last
        self.stacks = [self._reset() for _ in range(n_envs)]
        self.left = self.rng.integers(1, 8, n_envs)

    def _frame(self):
        return self.rng.integers(0, 256, (6, 5), dtype=np.uint8)

    def _reset(self):
        return np.repeat(self._frame()[None], K, axis=0)

    def step(self):
        obs = np.stack(self.stacks)
        nxt = np.stack([np.concatenate([s[1:], self._frame()[None]]) for s in self.stacks])
        self.left -= 1
        done = self.left == 0
        term = done & (self.rng.random(self.n) < 0.5)
        for e in range(self.n):
            self.stacks[e] = self._reset() if done[e] else nxt[e]
            if done[e]:
                self.left[e] = self.rng.integers(1, 8)
        if self.last:
            obs, nxt = np.moveaxis(obs, 1, -1), np.moveaxis(nxt, 1, -1)
        return {"obs": obs, "next_obs": nxt, "action": self.rng.integers(0, 6, self.n),
                "reward": self.rng.random(self.n).astype(np.float32), "terminated": term,
                "truncated": done & ~term}

    def batch(self, steps):
        out = [self.step() for _ in range(steps)]
        return {k: np.concatenate([s[k] for s in out]) for k in out[0]}


def same(a, b):
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("kinds", [(ReplayBuffer, FrameReplayBuffer),
                                   (PrioritizedReplayBuffer, PrioritizedFrameReplayBuffer)])
def test_samples_equal_a_plain_buffers_across_envs_episodes_and_wraparound(kinds, channels_last):
    plain, frames = kinds[0](53, seed=3), kinds[1](53, frame_stack=K, seed=3)
    env = Streams(3, seed=1, channels_last=channels_last)
    for it in range(40):  # ~6 turns of the ring, pushes of 1..5 steps of 3 envs
        batch = env.batch(1 + it % 5)
        plain.push(batch)
        frames.push(batch)
        same(plain.sample(32), frames.sample(32))
    every = np.arange(len(plain))
    same(plain._storage.read(every), frames._storage.read(every))
    # each frame once: about one new frame per row (+ one reset frame per episode), not 2K
    assert frames._storage.pool.live < 2.0 * len(frames) + 4 * 256


def test_nstep_rows_and_skipped_rows_stay_exact():
    # rows whose next_obs is n steps ahead, and a gap (rows dropped), still rebuild exactly
    env = Streams(2, seed=5)
    plain, frames = ReplayBuffer(40, seed=0), FrameReplayBuffer(40, seed=0)
    steps = [env.step() for _ in range(30)]
    for t in range(0, 27, 2):
        batch = {k: steps[t][k] for k in steps[t]}
        batch["next_obs"] = steps[t + 2]["obs"]
        plain.push(batch)
        frames.push(batch)
    every = np.arange(len(plain))
    same(plain._storage.read(every), frames._storage.read(every))


@pytest.mark.parametrize("n", [2, 3, 5])
def test_nstep_accumulator_rows_store_about_one_frame_each(n):
    # rows as the n-step enhancer makes them (per env, oldest first; next_obs n steps on, or the
    # episode's last obs) rebuild exactly, and each stores about one new frame: its next_obs
    # continues the previous row's next_obs
    env = Streams(4, seed=11)
    env.left[:] = 10_000  # long episodes: what is measured is the n-step continuation
    acc = NStepAccumulator(n, 0.99, 4)
    plain, frames = ReplayBuffer(2048, seed=0), FrameReplayBuffer(2048, seed=0)
    for _ in range(20):  # pushes of 12 steps of 4 envs, as a collector of 48 steps makes them
        rows = [r for r in (acc.push(env.step()) for _ in range(12)) if r is not None]
        batch = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}
        plain.push(batch)
        frames.push(batch)
    every = np.arange(len(plain))
    same(plain._storage.read(every), frames._storage.read(every))
    assert frames._storage.pool.live < 1.1 * len(frames) + 4 * (K + n + 2)


def test_save_load_round_trip_and_smaller_file(tmp_path):
    env = Streams(3, seed=2)
    # lookback 16 (of 256): the recent stacks it keeps alive for finding the next rows are
    # saved with the pool's frames, and beside 64 rows 256 stacks would be most of the file
    plain, frames = ReplayBuffer(64, seed=4), FrameReplayBuffer(64, seed=4, lookback=16)
    for _ in range(30):
        batch = env.batch(2)
        plain.push(batch)
        frames.push(batch)
    plain.save(str(tmp_path / "plain.npz"))
    frames.save(str(tmp_path / "frames.npz"))
    again = FrameReplayBuffer(64, seed=99, lookback=16)
    again.load(str(tmp_path / "frames.npz"))
    assert len(again) == len(frames) and again.position == frames.position
    same(frames.sample(16), again.sample(16))  # the RNG state came back too
    batch = env.batch(3)  # pushes after a load keep matching
    plain.push(batch)
    again.push(batch)
    every = np.arange(len(plain))
    same(plain._storage.read(every), again._storage.read(every))
    assert (tmp_path / "frames.npz").stat().st_size < 0.5 * (tmp_path / "plain.npz").stat().st_size


def test_a_saved_pools_unused_slots_come_back_free(tmp_path):
    # the file holds the pool's frames as they lie (no copy at save time), slots no row uses
    # among them; loaded, those are free, so pushes reuse them instead of growing the pool
    env = Streams(3, seed=8)
    frames = FrameReplayBuffer(48, seed=0, lookback=64)
    for _ in range(40):
        frames.push(env.batch(2))
    frames.save(str(tmp_path / "frames.npz"))
    again = FrameReplayBuffer(48, seed=0, lookback=64)
    again.load(str(tmp_path / "frames.npz"))
    pool = again._storage.pool
    used = np.unique(again._storage.row_frames[:len(again)])
    assert pool.live == len(used) < pool.high_water  # the recent stacks' frames were saved too
    assert sorted(pool._free) == sorted(set(range(pool.high_water)) - set(used.tolist()))
    same(frames._storage.read(np.arange(48)), again._storage.read(np.arange(48)))
    top = pool.high_water
    for _ in range(3):
        again.push(env.batch(1))  # 9 rows: fewer new frames than the free slots
    assert pool.high_water == top


def test_clear_then_push_samples_only_new_rows():
    env = Streams(3, seed=7)
    buf = FrameReplayBuffer(20, seed=0)
    buf.push(env.batch(10))
    buf.clear()
    assert len(buf) == 0 and buf._storage.pool.live == 0
    with pytest.raises(RuntimeError, match="empty"):
        buf.sample(2)
    batch = env.batch(2)
    buf.push(batch)
    got = buf.sample(50)
    np.testing.assert_array_equal(got["obs"], batch["obs"][got["index"]])


@pytest.mark.parametrize("obs, why", [
    (np.zeros((2, 8), np.float32), "uint8 frame stacks"),
    (np.zeros((2, 4, 6, 5), np.float32), "got float32"),
    (np.zeros((2, 3, 6, 5), np.uint8), "frame_stack=4"),
    ({"pos": np.zeros((2, 4, 6, 5), np.uint8)}, "missing/nested"),
])
def test_refuses_non_frame_observations(obs, why):
    buf = FrameReplayBuffer(8)
    with pytest.raises(ValueError, match=why):
        buf.push({"obs": obs, "next_obs": obs, "reward": np.zeros(2, np.float32)})


def test_refuses_a_changed_frame_shape_and_bad_arguments():
    buf = FrameReplayBuffer(8)
    buf.push(Streams(2, seed=0).batch(1))
    bad = Streams(2, seed=0).batch(1)
    bad["obs"] = bad["next_obs"] = np.zeros((2, 4, 7, 5), np.uint8)
    with pytest.raises(ValueError, match=r"first push's \(4, 6, 5\)"):
        buf.push(bad)
    with pytest.raises(ValueError, match="frame_stack"):
        FrameReplayBuffer(8, frame_stack=0)
