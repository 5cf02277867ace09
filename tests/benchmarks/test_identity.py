"""benchmarks/identity.py: the same run hashes the same, and one flipped bit of a weight does not."""
from __future__ import annotations

import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import identity  # noqa: E402

from rlpipe.middleware.ckpt import load_checkpoint  # noqa: E402

# cartpole-dqn at a smaller budget than the script's: a few dozen updates.
TINY = {"cartpole-dqn": ["--max-env-steps", "512", "--set", "replay.min_samples=256",
                         "--set", "policy.collect.random_collect_size=256",
                         "--set", "policy.learn.update_per_collect=8",
                         "--set", "policy.eval.evaluator.n_episode=1"]}


def test_a_run_hashes_the_same_twice_and_a_flipped_weight_bit_changes_the_hash(tmp_path):
    first = identity.train_and_hash(["cartpole-dqn"], tmp_path / "a", TINY)
    second = identity.train_and_hash(["cartpole-dqn"], tmp_path / "b", TINY)
    assert first == second

    state = load_checkpoint(tmp_path / "a" / "cartpole-dqn", which="final")
    assert state["ctx"]["train_iter"] > 0  # the hashed weights are trained ones
    assert identity.state_hash(state) == first["cartpole-dqn"]
    weight = state["policy"]["online"]["head.weight"]
    weight.view(torch.int32).view(-1)[0] ^= 1  # the lowest mantissa bit of one float32
    assert identity.state_hash(state) != first["cartpole-dqn"]
