"""The learning check of the offline pipeline: DQN trained only on a data set of a scripted
CartPole expert (epsilon 0.1) reaches an evaluation return of 300 through the CLI."""
import json

import pytest

from rlpipe.cli import main

from .datasets import cartpole_data


@pytest.mark.slow
def test_offline_dqn_on_cartpole_expert_data_reaches_300(minari_root, capsys):
    behaviour = cartpole_data("cartpole/expert-v0", 50, eps=0.1)
    assert behaviour > 400  # the data set is the expert's (with 10% random actions)
    code = main(["train", "--algo", "dqn", "--dataset", "cartpole/expert-v0", "--no-progress",
                 "--set", "max_train_iter=6000", "--set", "env.stop_value=300",
                 "--set", "policy.eval.evaluator.eval_freq=500",
                 "--set", "policy.learn.lr=3e-4", "--set", "policy.learn.target_update_freq=100"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["best_eval_value"] >= 300, summary
    assert summary["env_step"] is None  # it never stepped an env to learn
