"""Every bad input ends with exit code 2 and one line that says what, where and how to fix."""
import gymnasium as gym
import numpy as np
import pytest

from rlpipe.cli import main
from rlpipe.policies import DQNPolicy


@pytest.mark.parametrize("argv, expected", [
    (["train", "cartpole-dqn", "--set", "policy.learn.lrr=1e-3"], ["policy.learn.lrr", "policy.learn.lr"]),
    (["train", "cartpole-dqn", "--set", "policy.learn.batch_size='big'"],
     ["policy.learn.batch_size", "expects int", "str"]),
    (["train", "cartpol-dqn"], ["unknown zoo entry", "cartpole-dqn"]),
    (["train", "cartpole-dqn", "--set", "env.id=CartPol-v1"], ["CartPol-v1", "CartPole-v1"]),
    (["train", "cartpole-dqn", "--set", "env.id=Pendulum-v1"], ["Box", "SAC"]),
    (["eval", "runs/does-not-exist"], ["does not exist", "run folder"]),
    (["train", "--resume", "runs/does-not-exist"], ["no such run folder"]),
    (["train"], ["--resume", "rlpipe list"]),
    # values that cannot work are refused before a run starts (no ZeroDivisionError later)
    (["train", "cartpole-dqn", "--set", "policy.collect.n_sample=0"],
     ["policy.collect.n_sample", "an int >= 1"]),
    (["train", "cartpole-dqn", "--set", "policy.learn.gamma=1.5"],
     ["policy.learn.gamma", "in [0, 1]"]),
    (["train", "cartpole-ppo", "--set", "policy.learn.lr=nan"], ["policy.learn.lr", "> 0"]),
    (["train", "pendulum-sac", "--set", "policy.learn.tau=0"], ["policy.learn.tau", "(0, 1]"]),
    (["train", "cartpole-dqn", "--set", "env.max_restarts=-1"], ["env.max_restarts", ">= 0"]),
])
def test_cli_bad_input(argv, expected, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv + (["--no-progress"] if argv[0] == "train" and len(argv) > 1
                        and "--resume" not in argv else [])) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    for text in expected:
        assert text in err, (text, err)


def test_observation_of_the_wrong_shape_is_named():
    policy = DQNPolicy({}, gym.spaces.Box(-1, 1, (4,), np.float32), gym.spaces.Discrete(2))
    with pytest.raises(ValueError, match=r"\(4,\)"):
        policy.collect_mode.forward(np.zeros((3, 5), np.float32), eps=0.0)
