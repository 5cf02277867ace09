"""`rlpipe train --algo ALGO --env ENV`: any trainable policy on any env, through the CLI."""
import json
import pathlib
import textwrap

import pytest

from rlpipe.cli import main
from rlpipe.zoo import get_entry

SHORT = ["--max-env-steps", "200", "--no-progress", "--set", "policy.eval.evaluator.n_episode=2",
         "--set", "env.n_envs=2", "--set", "env.eval_n_envs=2",
         "--set", "policy.collect.n_sample=256"]


def _summary(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def _config_json(run_dir) -> dict:
    return json.loads((pathlib.Path(run_dir) / "config.json").read_text())


def test_algo_env_trains_into_runs_env_algo_and_eval_and_config_read_it(tmp_path, monkeypatch,
                                                                       capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--algo", "ppo", "--env", "Acrobot-v1", *SHORT]) == 0
    run_dir = pathlib.Path(_summary(capsys)["run_dir"])
    assert run_dir.parent == pathlib.Path("runs") / "Acrobot-v1-ppo"
    payload = _config_json(run_dir)
    assert payload["entry"] == "ppo@Acrobot-v1"
    assert payload["config"]["env"]["id"] == "Acrobot-v1"
    assert payload["config"]["env"]["stop_value"] == -100  # Acrobot-v1's reward_threshold
    assert main(["eval", str(run_dir), "--episodes", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["entry"] == "ppo@Acrobot-v1"
    assert main(["config", str(run_dir)]) == 0
    assert '"Acrobot-v1"' in capsys.readouterr().out
    assert main(["train", "--resume", str(run_dir), "--max-env-steps", "400",
                 "--no-progress"]) == 0
    assert _summary(capsys)["env_step"] >= 400


def test_off_policy_algo_trains_through_the_replay_pipeline(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert main(["train", "--algo", "dqn", "--env", "CartPole-v1", "--run-dir", str(run_dir),
                 *SHORT, "--set", "replay.min_samples=64",
                 "--max-env-steps", "256"]) == 0  # two collections: the second one trains
    assert _summary(capsys)["train_iter"] > 0
    assert "replay" in _config_json(run_dir)["config"]


def test_env_without_reward_threshold_has_no_stop_value(capsys):
    assert main(["config", "--algo", "sac", "--env", "Pendulum-v1"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("env.stop_value"))
    assert "null" in line


@pytest.mark.parametrize("argv, expected", [
    (["--algo", "dqn", "--env", "Pendulum-v1"],
     ["dqn needs a Discrete action space", "Pendulum-v1's actions are Box",
      "use --algo ppo", "--algo sac", "--algo td3"]),
    (["--algo", "sac", "--env", "CartPole-v1"],
     ["sac needs a Box action space", "use --algo dqn", "--algo ppo"]),
    (["--algo", "random", "--env", "CartPole-v1"], ["declares no zoo pipeline"]),
    (["--algo", "dqm", "--env", "CartPole-v1"], ["no algorithm of that name", "dqn, ", "ppo, ", "sac, "]),
    (["--algo", "ppo"], ["--env is missing"]),
    (["--algo", "ppo", "--env", "NoSuchEnv-v0"], ["unknown environment 'NoSuchEnv-v0'"]),
    (["--algo", "ppo", "--env", "CartPol-v1"], ["unknown environment 'CartPol-v1'",
                                               "Close matches: 'CartPole-v1'"]),
    (["--algo", "mappo", "--env", "CartPole-v1"],
     ["CartPole-v1 is a single-agent env", "--algo mappo is a multi-agent algorithm",
      "--algo dqn", "--algo ppo", "PettingZoo parallel env", "'mpe2/simple_spread_v3'",
      "multi-agent entries train it (`rlpipe list`", "rlpipe[marl]"]),
    (["cartpole-dqn", "--algo", "ppo", "--env", "CartPole-v1"], ["not both"]),
    (["--algo", "no_such_module:Policy", "--env", "CartPole-v1"], ["cannot import"]),
])
def test_what_cannot_train_says_why_in_cli_words(argv, expected, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["train", *argv, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    for text in expected:
        assert text in err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("env", ["Nope-v0", "MyRobot-v1"])
def test_an_env_name_like_no_other_gets_no_suggestion(env, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--algo", "ppo", "--env", env, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"unknown environment {env!r}" in err and "Close matches" not in err
    assert "Hopper-v5" not in err


def test_a_factory_env_from_module_colon_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    env = "gymnasium.envs.classic_control.cartpole:CartPoleEnv"
    assert main(["train", "--algo", "ppo", "--env", env, *SHORT]) == 0
    run_dir = _summary(capsys)["run_dir"]
    assert pathlib.Path(run_dir).parent.name == "gymnasium.envs.classic_control.cartpole-CartPoleEnv-ppo"
    assert _config_json(run_dir)["config"]["env"]["stop_value"] is None  # a bare class: no spec
    assert main(["eval", run_dir, "--episodes", "1"]) == 0


USER_MODULE = '''
from rlpipe.policies import PPOPolicy, register_policy
import gymnasium as gym


class MyPPO(PPOPolicy):
    """PPO under another name: a stand-in for a user's own algorithm."""


def make_env():
    return gym.make("CartPole-v1", max_episode_steps=50)


register_policy("myppo", MyPPO, overwrite=True)
'''


def test_a_user_policy_by_import_path_or_by_registered_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "user_algos.py").write_text(textwrap.dedent(USER_MODULE))
    assert main(["train", "--algo", "user_algos:MyPPO", "--env", "user_algos:make_env",
                 *SHORT]) == 0
    run_dir = _summary(capsys)["run_dir"]
    assert pathlib.Path(run_dir).parent.name == "user_algos-make_env-myppo"
    assert _config_json(run_dir)["entry"] == "user_algos:MyPPO@user_algos:make_env"

    assert main(["train", "--import", "user_algos", "--algo", "myppo", "--env", "CartPole-v1",
                 *SHORT]) == 0
    run_dir = _summary(capsys)["run_dir"]
    payload = _config_json(run_dir)
    # recorded by import path, so a process that never ran the registration finds it again
    assert payload["entry"] == "user_algos:MyPPO@CartPole-v1"
    assert payload["config"]["imports"] == ["user_algos"]
    assert get_entry(payload["entry"]).policy_cls.__name__ == "MyPPO"


def test_changing_a_zoo_entrys_env_drops_its_tuned_stop_value(tmp_path, caplog):
    run_dir = tmp_path / "run"
    assert main(["train", "cartpole-dqn", "--set", "env.id=Acrobot-v1", "--run-dir", str(run_dir),
                 *SHORT]) == 0
    lines = [r.getMessage() for r in caplog.records if "stop_value" in r.getMessage()]
    assert len(lines) == 1 and "dropped the stop_value 475" in lines[0]
    assert _config_json(run_dir)["config"]["env"]["stop_value"] is None


def test_an_explicit_stop_value_for_the_new_env_is_kept(capsys, caplog):
    assert main(["config", "cartpole-dqn", "--set", "env.id=Acrobot-v1",
                 "--set", "env.stop_value=-90"]) == 0
    assert not [r for r in caplog.records if "dropped" in r.getMessage()]
    line = next(ln for ln in capsys.readouterr().out.splitlines()
                if ln.startswith("env.stop_value"))
    assert "-90" in line
