"""`--init-from RUN_DIR`: a new (online or offline) run starts from another run's verified
best.pt (else final.pt): networks loaded, optimisers and counters fresh unless asked."""
import json
import pathlib

import gymnasium as gym
import pytest
import torch
from easydict import EasyDict

from rlpipe.cli import main
from rlpipe.middleware import load_checkpoint, read_metrics
from rlpipe.policies import DQNPolicy
from rlpipe.runs import CheckpointError, RunDir
from rlpipe.training import train
from rlpipe.pipelines.init_from import init_policy, pick_checkpoint

from .datasets import cartpole_data, pendulum_data

OFFLINE = ["max_train_iter=60", "policy.eval.evaluator.eval_freq=30", "env.stop_value=None",
           "policy.learn.batch_size=32", "policy.eval.evaluator.n_episode=2", "env.eval_n_envs=2"]
ONLINE = ["--no-progress", "--max-env-steps", "64", "--set", "replay.min_samples=32",
          "--set", "policy.collect.n_sample=32", "--set", "env.n_envs=2",
          "--set", "env.eval_n_envs=2", "--set", "policy.eval.evaluator.n_episode=2"]


@pytest.fixture
def offline_run(minari_root):
    cartpole_data("cartpole/init-v0", 2)
    train(algo="dqn", dataset="cartpole/init-v0", run_dir="offline", progress=False,
          overrides=OFFLINE)
    return "offline"


def _cartpole_dqn():
    env = gym.make("CartPole-v1")
    return DQNPolicy({"seed": 5}, env.observation_space, env.action_space)


@pytest.mark.parametrize("with_optim", [False, True])
def test_weights_are_loaded_and_optimisers_fresh_unless_asked(offline_run, with_optim):
    assert pick_checkpoint(offline_run) == str(RunDir(offline_run).best)
    checkpoint = pick_checkpoint(str(RunDir(offline_run).final))  # a .pt of a run folder
    saved = load_checkpoint(checkpoint)["policy"]
    policy = _cartpole_dqn()
    init_policy(EasyDict(init_from=checkpoint, init_from_optim=with_optim), policy)
    state = policy.state_dict()
    for net in ("online", "target"):
        assert all(torch.equal(state[net][k], saved[net][k]) for k in saved[net])
    assert state["train_iter"] == 0  # this run's own counter ...
    assert state["rng"] == _cartpole_dqn().state_dict()["rng"]  # ... and its own RNG
    assert bool(state["optimizer"]["state"]) == with_optim
    assert saved["optimizer"]["state"]


def test_an_online_run_starts_from_an_offline_one(offline_run, capsys, caplog):
    caplog.set_level("INFO", logger="rlpipe")
    assert main(["train", "--algo", "dqn", "--env", "CartPole-v1", "--init-from", offline_run,
                 *ONLINE]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert f"initialised the policy from {RunDir(offline_run).best}" in caplog.text
    _, config = RunDir(summary["run_dir"]).read_config()
    assert config["init_from"] == str(RunDir(offline_run).best)
    assert "resume_trust" not in config
    assert summary["env_step"] >= 64 and read_metrics(summary["run_dir"])


def test_another_class_or_other_spaces_are_one_line(offline_run, capsys):
    assert main(["train", "--algo", "sac", "--env", "Pendulum-v1", "--init-from", offline_run,
                 *ONLINE]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "trained a DQNPolicy" in line and "SACPolicy does not accept" in line
    assert main(["train", "--algo", "dqn", "--env", "Acrobot-v1", "--init-from", offline_run,
                 *ONLINE]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "observation space" in line and "start from a run of the same env" in line
    assert main(["train", "--algo", "ppo", "--env", "CartPole-v1", "--init-from", offline_run,
                 *ONLINE]) == 2
    assert "on-policy" in capsys.readouterr().err
    assert not pathlib.Path("runs").exists()  # refused before any run folder was made


def test_an_altered_checkpoint_is_refused(offline_run):
    best = RunDir(offline_run).best
    best.write_bytes(best.read_bytes()[:-8] + b"tampered")
    policy = _cartpole_dqn()
    with pytest.raises(CheckpointError, match="best.pt"):
        init_policy(EasyDict(init_from=str(best)), policy)


@pytest.mark.slow
def test_sac_trained_offline_starts_online_far_better_than_a_fresh_one(minari_root):
    """SAC on noisy expert Pendulum data until an evaluation reaches -700 (best.pt), then
    online from it: its first evaluation (before any online update) is far above a fresh
    SAC's."""
    pendulum_data("pendulum/expert-v0", 40, noise=0.5)
    small = ["policy.model.actor_hidden=[64,64]", "policy.model.critic_hidden=[64,64]",
             "policy.learn.init_alpha=0.2", "policy.eval.evaluator.n_episode=5"]
    offline = train(algo="sac", dataset="pendulum/expert-v0", run_dir="offline", progress=False,
                    overrides=small + ["max_train_iter=6000", "env.stop_value=-700",
                                       "policy.eval.evaluator.eval_freq=250"])
    assert offline["best_eval_value"] >= -700, offline
    online = ["max_env_step=200", "replay.min_samples=1000"]  # one iteration: the first eval
    tuned = train(algo="sac", env="Pendulum-v1", init_from="offline", progress=False,
                  overrides=small + online, run_dir="tuned")
    fresh = train(algo="sac", env="Pendulum-v1", progress=False, overrides=small + online,
                  run_dir="fresh")
    first = [read_metrics(d)[0]["eval/return_mean"] for d in ("tuned", "fresh")]
    assert first[0] > first[1] + 400, first
