"""`rlpipe train --algo ALGO --dataset ID [--env ID]`: the offline pipeline from the command
line, its run folder, and one line for each bad data set."""
import json
import pathlib

import minari
import numpy as np
import pytest
from minari.data_collector import EpisodeBuffer

from rlpipe.cli import main
from rlpipe.middleware import read_metrics
from rlpipe.runs import RunDir
from rlpipe.training import train

from .datasets import cartpole_data

TINY = ["--set", "max_train_iter=40", "--set", "policy.eval.evaluator.eval_freq=20",
        "--set", "policy.learn.batch_size=16", "--set", "policy.eval.evaluator.n_episode=2",
        "--set", "env.eval_n_envs=2", "--set", "env.stop_value=None", "--no-progress"]
OVERRIDES = [o for o in TINY if "=" in o]  # the same, for train()


def _error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    return err.splitlines()[-1]


def test_train_offline_from_the_cli_and_evaluate(minari_root, capsys):
    cartpole_data("cartpole/tiny-v0", 3)
    assert main(["train", "--algo", "dqn", "--dataset", "cartpole/tiny-v0", *TINY]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["train_iter"] == 40 and summary["env_step"] is None
    run = RunDir(summary["run_dir"])
    assert run.root.parent == pathlib.Path("runs/cartpole-tiny-v0-dqn")
    entry, config = run.read_config()
    assert entry == "dqn@dataset:cartpole/tiny-v0"
    assert config["dataset"]["id"] == "cartpole/tiny-v0"
    assert config["env"]["id"] == "CartPole-v1"  # the data set's env, recorded for `rlpipe eval`
    rows = read_metrics(run.root)
    evals = [r for r in rows if "eval/return_mean" in r]
    # every eval_freq train iterations; a row is keyed by the train_iter its iteration ended
    # at (the evaluation runs before that iteration's update, as online), the final one at 40
    assert [r["train_iter"] for r in evals] == [1, 21, 40]
    assert all("env_step" not in r for r in rows)
    assert run.final.is_file() and run.best.is_file()
    assert main(["eval", str(run.root), "--episodes", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["episodes"] == 2


def test_the_eval_env_can_be_named_and_must_fit_the_data(minari_root, capsys):
    cartpole_data("cartpole/tiny-v0", 2)
    result = train(algo="dqn", dataset="cartpole/tiny-v0", env="CartPole-v1",
                   overrides=OVERRIDES, progress=False)
    assert result["train_iter"] == 40
    assert main(["train", "--algo", "dqn", "--dataset", "cartpole/tiny-v0",
                 "--env", "Acrobot-v1", *TINY]) == 2
    line = _error_line(capsys)
    assert "does not fit env 'Acrobot-v1'" in line and "observation space" in line


def test_a_missing_data_set_names_the_commands_that_make_one(minari_root, capsys):
    assert main(["train", "--algo", "dqn", "--dataset", "cartpole/none-v0", *TINY]) == 2
    line = _error_line(capsys)
    assert "'cartpole/none-v0' is not in the Minari root" in line
    assert "rlpipe train cartpole-dqn" in line
    assert "rlpipe dataset collect" in line and "--id cartpole/none-v0" in line
    assert not pathlib.Path("runs").exists()


def test_nan_rewards_are_one_line(minari_root, capsys):
    obs = np.zeros((4, 4), np.float32)
    rewards = np.array([1.0, np.nan, 1.0])
    minari.create_dataset_from_buffers(
        "cartpole/nan-v0", [EpisodeBuffer(id=0, observations=obs, actions=np.zeros(3, np.int64),
                                          rewards=rewards, terminations=np.zeros(3, bool),
                                          truncations=np.array([0, 0, 1], bool))],
        env="CartPole-v1", eval_env="CartPole-v1", algorithm_name="hand", author="t", author_email="t",
        code_permalink="t", description="nan")
    assert main(["train", "--algo", "dqn", "--dataset", "cartpole/nan-v0", *TINY]) == 2
    line = _error_line(capsys)
    assert "cartpole/nan-v0" in line and "reward" in line.lower() and "nan" in line.lower()


def test_an_on_policy_algorithm_is_refused_with_the_ones_that_fit(minari_root, capsys):
    cartpole_data("cartpole/tiny-v0", 1)
    assert main(["train", "--algo", "ppo", "--dataset", "cartpole/tiny-v0", *TINY]) == 2
    line = _error_line(capsys)
    assert "ppo is on-policy" in line and "dqn" in line and "sac" in line


def test_config_shows_the_offline_keys_with_their_meanings(minari_root, capsys):
    cartpole_data("cartpole/tiny-v0", 1)
    assert main(["config", "--algo", "dqn", "--dataset", "cartpole/tiny-v0"]) == 0
    out = capsys.readouterr().out
    lines = {ln.split("=")[0].strip(): ln for ln in out.splitlines()[1:]}
    assert '"cartpole/tiny-v0"' in lines["dataset.id"] and "#" in lines["dataset.id"]
    assert '"CartPole-v1"' in lines["env.id"]
    for key in ("max_train_iter", "init_from", "logger.train_show_freq"):
        assert "#" in lines[key], key
    assert "max_env_step" not in lines and "replay.capacity" not in lines
