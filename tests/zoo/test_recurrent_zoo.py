"""The POMDP zoo entries of LSTM-PPO: sync and async runs, exact resume (the collector's hidden
states are in the checkpoint), --collectors refused clearly, and a short learning check."""
import pytest

from rlpipe.zoo import get_entry
from rlpipe.training import resume, train
from tests.zoo.test_resume import _assert_same, _weights

FAST = ["policy.eval.evaluator.n_episode=2", "env.eval_n_envs=2", "env.stop_value=1e9",
        "policy.learn.epoch_per_collect=2", "policy.learn.lr_decay_env_steps=1024"]


def test_entries_resolve_with_their_policies():
    for name, algo in (("cartpole-novel-ppo-lstm", "PPOLSTMPolicy"),
                       ("pendulum-novel-ppo-lstm", "PPOLSTMPolicy"),
                       ("minigrid-memory-ppo-lstm", "PPOLSTMPolicy"),
                       ("cartpole-novel-ppo", "PPOPolicy")):
        entry = get_entry(name)
        assert entry.policy_cls.__name__ == algo
        assert entry.resolve().env.id == entry.config["env"]["id"]


def test_stopped_and_resumed_run_ends_with_identical_weights(tmp_path):
    whole, split = str(tmp_path / "whole"), str(tmp_path / "split")
    a = train("cartpole-novel-ppo-lstm", seed=2, max_env_step=1024, run_dir=whole,
              progress=False, overrides=FAST)
    first = train("cartpole-novel-ppo-lstm", seed=2, max_env_step=512, run_dir=split,
                  progress=False, overrides=FAST)
    assert first["env_step"] == 512  # mid-episode: the states must come back with the cursor
    b = resume(split, max_env_step=1024, progress=False)
    assert (a["env_step"], a["train_iter"]) == (b["env_step"], b["train_iter"])
    _assert_same(_weights(whole), _weights(split))


def test_async_mode_runs_the_recurrent_pipeline(tmp_path):
    result = train("cartpole-novel-ppo-lstm", seed=0, max_env_step=768, async_mode=True,
                   run_dir=str(tmp_path / "run"), progress=False, overrides=FAST)
    assert result["env_step"] >= 768 and result["train_iter"] > 0


def test_the_recurrent_on_policy_entry_runs_with_local_collectors(tmp_path):
    """On-policy --collectors (each collector process keeps its own hidden states; the learner
    runs GAE and the chunked updates on each collector's time-ordered rollout)."""
    result = train("cartpole-novel-ppo-lstm", collectors=2, backend="local", max_env_step=1024,
                   run_dir=str(tmp_path / "run"), progress=False)
    assert result["env_step"] >= 1024 and result["train_iter"] > 0
    assert result["final_eval_iter"] == result["train_iter"]


@pytest.mark.slow
def test_cartpole_novel_ppo_lstm_reaches_150_quickly(tmp_path):
    result = train("cartpole-novel-ppo-lstm", seed=0, max_env_step=12_000, progress=False,
                   run_dir=str(tmp_path / "run"), overrides=["env.stop_value=150"])
    assert result["best_eval_value"] >= 150, result
