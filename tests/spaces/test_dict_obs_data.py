"""The data path carries Dict observations untouched, images as uint8: replay (uniform and
prioritized) with save/load, n-step, rollouts with GAE and to_torch (the exchange and the
checkpointed buffer: test_dict_obs_pipelines.py)."""
import numpy as np
import torch

from rlpipe.data import (NStepAccumulator, PrioritizedReplayBuffer, ReplayBuffer, RolloutStorage,
                         to_torch)

N = 4


def _obs(t):
    return {"image": np.full((N, 6, 6, 3), t, np.uint8),
            "state": {"vec": np.full((N, 3), t, np.float32), "flag": np.full(N, t % 3, np.int64)}}


def _step(t, **extra):
    return dict(obs=_obs(t), action=np.full(N, t % 2), reward=np.ones(N, np.float32),
                next_obs=_obs(t + 1), terminated=np.zeros(N, bool),
                truncated=np.full(N, t == 5), **extra)


def _check_obs(obs, rows):
    assert obs["image"].dtype == np.uint8 and obs["image"].shape == (rows, 6, 6, 3)
    assert obs["state"]["vec"].dtype == np.float32 and obs["state"]["flag"].dtype == np.int64
    # each row is one whole observation: its parts agree on the step t they came from
    t = obs["image"][:, 0, 0, 0].astype(np.int64)
    assert (obs["state"]["vec"][:, 0] == t).all() and (obs["state"]["flag"] == t % 3).all()


def test_replay_keeps_dicts_and_uint8_through_save_and_load(tmp_path):
    for cls in (ReplayBuffer, PrioritizedReplayBuffer):
        buf = cls(64, seed=0)
        for t in range(6):
            buf.push(_step(t))
        batch = buf.sample(16)
        _check_obs(batch["obs"], 16)
        _check_obs(batch["next_obs"], 16)
        assert (batch["next_obs"]["image"][:, 0, 0, 0] == batch["obs"]["image"][:, 0, 0, 0] + 1).all()
        path = str(tmp_path / f"{cls.__name__}.npz")
        buf.save(path)
        again = cls(64, seed=0)
        again.load(path)
        _check_obs(again.sample(8)["obs"], 8)
        assert len(again) == len(buf) == 24


def test_nstep_carries_dict_obs_and_next_obs():
    acc = NStepAccumulator(3, 0.9, N)
    out = [acc.push(_step(t)) for t in range(6)]
    done = [o for o in out if o is not None]
    assert done
    for o in done:
        _check_obs(o["obs"], len(o["reward"]))
        _check_obs(o["next_obs"], len(o["reward"]))
    first = done[0]  # the window of t=0 closes at t=2: next_obs is the obs of t=3
    assert (first["next_obs"]["image"][:, 0, 0, 0] == first["obs"]["image"][:, 0, 0, 0] + 3).all()


def test_rollout_and_gae_with_dict_obs_and_a_value_function_on_dicts():
    seen = []

    def value_fn(next_obs):
        seen.append(next_obs)
        return next_obs["state"]["vec"][:, 0].astype(np.float32)

    store = RolloutStorage(6, N)
    for t in range(6):
        store.add(_step(t, value=np.full(N, float(t), np.float32)))
    store.compute(0.9, 0.95, value_fn)
    assert seen and all(isinstance(o, dict) and o["image"].dtype == np.uint8 for o in seen)
    batch = store.batch()
    assert batch["obs"]["image"].dtype == np.uint8 and batch["obs"]["image"].shape[1:] == (6, 6, 3)
    mb = next(iter(store.minibatches(8, rng=0)))
    _check_obs(mb["obs"], 8)
    assert mb["advantage"].shape == (8,)


def test_to_torch_keeps_uint8_images_and_the_tree_is_indexable():
    t = to_torch({"obs": _obs(7), "reward": np.ones(N, np.float32)})
    assert t["obs"]["image"].dtype == torch.uint8
    assert t["obs"][torch.tensor([1, 3])]["state"]["vec"].shape == (2, 3)
