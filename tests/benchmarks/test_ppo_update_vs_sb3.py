"""benchmarks/ppo_update_vs_sb3.py: on SB3's rollout, from SB3's weights and optimizer state and
in SB3's minibatch order, rlpipe's PPO update makes SB3's step (to float rounding), and rlpipe's
GAE gives SB3's advantages; with normalised advantages (rl-zoo's DoorKey settings) and without
them plus an entropy bonus (the entry's)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))


@pytest.mark.parametrize("task", ["ppo-doorkey-100k", "ppo-doorkey-100k-entry"])
def test_rlpipes_update_is_sb3s_step_on_the_same_rollout(task):
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("minigrid")
    import ppo_update_vs_sb3

    for r in ppo_update_vs_sb3.compare(task, seed=3, updates=2):
        assert r["outputs_gap"] < 1e-6  # the weights were mapped onto the same network
        assert r["adv_gap"] < 1e-5 * max(1.0, r["adv_max"]) and r["ret_gap"] < 1e-5
        assert r["rlpipe"]["n_updates"] == r["sb3"]["n_updates"] == 160
        assert max(moved for moved, _ in r["params"].values()) > 1e-2  # a real step
        for name, (moved, diff) in r["params"].items():
            assert moved > 0 and diff < 1e-3 * moved + 1e-7, (name, moved, diff)
