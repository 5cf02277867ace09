"""pong-dqn: a smoke run of its pipeline, made small by overrides, on real Atari frames (no
learning check; tests/zoo/test_atari_mujoco_short.py runs the whole path)."""
import importlib.util

import numpy as np
import pytest

from rlpipe.envs import EnvManager
from rlpipe.zoo import get_entry

needs_ale = pytest.mark.skipif(importlib.util.find_spec("ale_py") is None,
                               reason='ale-py not installed: pip install "rlpipe[atari]"')


@needs_ale
def test_atari_frames_are_stacked_84x84_uint8():
    with EnvManager("atari-pong", n_envs=2, seed=0, mode="sync") as env:
        obs = env.reset()
        assert obs.shape == (2, 4, 84, 84) and obs.dtype == np.uint8
        result = env.step(np.zeros(2, dtype=np.int64))
        assert result.obs.shape == (2, 4, 84, 84) and result.valid.all()


@needs_ale
def test_pong_dqn_pipeline_runs_two_iterations(tmp_path):
    entry = get_entry("pong-dqn")
    cfg = entry.resolve({"max_env_step": 48, "progress": False, "run_dir": str(tmp_path),
                         "env": {"n_envs": 2, "eval_n_envs": 1},
                         "replay": {"capacity": 200, "min_samples": 16},
                         "policy": {"collect": {"n_sample": 16, "random_collect_size": 16},
                                    "learn": {"batch_size": 4, "update_per_collect": 2},
                                    "eval": {"evaluator": {"eval_freq": 10_000, "n_episode": 1}},
                                    "model": {"hidden": (32,)}}},
                        overrides=["max_train_iter=4"])  # 2 updates per iteration
    result = entry.run(cfg)
    assert result["train_iter"] >= 4 and result["env_step"] >= 32
