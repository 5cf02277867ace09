"""The minigrid-doorkey-ppo entry: the Dict observation (image + direction, mission left out)
through the CLI, and a short learning check."""
import json

import pytest

from rlpipe.cli import main
from rlpipe.envs import EnvManager
from rlpipe.middleware import load_checkpoint

pytest.importorskip("minigrid")

QUICK = ["--set", "env.n_envs=4", "--set", "env.eval_n_envs=2",
         "--set", "policy.collect.n_sample=256", "--set", "policy.eval.evaluator.n_episode=2",
         "--set", "policy.learn.epoch_per_collect=1"]


def test_minigrid_env_names_keep_image_and_direction():
    env = EnvManager("MiniGrid-DoorKey-5x5-v0", n_envs=2, seed=0, mode="sync")
    try:
        space = env.observation_space
        assert sorted(space.spaces) == ["direction", "image"]
        assert space["image"].high[0, 0].tolist() == [10, 5, 2]
        obs = env.reset()
        obs = obs[0] if isinstance(obs, tuple) else obs
        assert obs["image"].dtype.name == "uint8" and obs["image"].shape == (2, 7, 7, 3)
    finally:
        env.close()


def test_minigrid_gets_int_actions_and_steps_as_with_numpy_ones():
    """rlpipe's MiniGrid envs hand MiniGrid Python ints (a NumPy integer compared with its
    action enum costs ~50x more); the episode is the same as stepping the bare env with the
    NumPy actions a batched policy gives, and env.spec rebuilds the wrappers."""
    import gymnasium as gym
    import numpy as np

    from rlpipe.envs._minigrid import make_minigrid

    env = make_minigrid("MiniGrid-DoorKey-5x5-v0")
    bare = gym.make("MiniGrid-DoorKey-5x5-v0")
    seen = []
    inner_step = env.unwrapped.step
    env.unwrapped.step = lambda action: (seen.append(type(action)), inner_step(action))[1]
    obs, _ = env.reset(seed=3)
    bare_obs, _ = bare.reset(seed=3)
    for action in np.random.default_rng(0).integers(0, 7, 60):
        obs, reward, terminated, truncated, _ = env.step(action)
        bare_obs, bare_reward, bare_term, bare_trunc, _ = bare.step(action)
        assert np.array_equal(obs["image"], bare_obs["image"])
        assert (obs["direction"], reward, terminated, truncated) == (
            bare_obs["direction"], bare_reward, bare_term, bare_trunc)
    assert set(seen) == {int}
    assert type(env.spec.make()) is type(env)


def test_minigrid_entry_trains_on_the_dict_observation(tmp_path, capsys):
    assert main(["train", "minigrid-doorkey-ppo", "--run-dir", str(tmp_path / "run"),
                 "--no-progress", "--max-env-steps", "512", *QUICK]) == 0
    weights = load_checkpoint(str(tmp_path / "run"), which="final")["policy"]["model"]
    # direction one-hot (4) + the 7×7×3 grid read flat feed the actor's MLP (the critic has its own)
    assert weights["actor_encoder.mlp.net.0.weight"].shape[1] == 4 + 7 * 7 * 3
    assert weights["critic_encoder.mlp.net.0.weight"].shape[1] == 4 + 7 * 7 * 3
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["env_step"] == 512


@pytest.mark.slow
def test_minigrid_entry_learns_empty_5x5(tmp_path, capsys):
    """The same entry on MiniGrid-Empty-5x5 (the goal in the far corner): a random walk scores
    about 0.1; the bar is loose."""
    assert main(["train", "minigrid-doorkey-ppo", "--run-dir", str(tmp_path / "run"),
                 "--no-progress", "--max-env-steps", "16384",
                 "--set", "env.id=MiniGrid-Empty-5x5-v0", "--set", "env.stop_value=0.9",
                 "--set", "env.n_envs=8", "--set", "policy.collect.n_sample=1024",
                 "--set", "policy.learn.lr_schedule=constant",  # no decay on so short a run
                 "--set", "policy.eval.evaluator.eval_freq=64",
                 "--set", "policy.eval.evaluator.n_episode=10"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["best_eval_value"] >= 0.6, summary


@pytest.mark.parametrize("algo, env_id, weights", [
    ("dqn", "MiniGrid-Empty-5x5-v0", ("online", "encoder.mlp.net.0.weight")),
    ("ppo", "MiniGrid-DoorKey-5x5-v0", ("model", "actor_encoder.mlp.net.0.weight")),
])
def test_any_minigrid_id_trains_from_the_cli_without_an_import(algo, env_id, weights, tmp_path,
                                                               capsys):
    # 512-step rollouts (the standard PPO rollout is 2048 env steps)
    assert main(["train", "--algo", algo, "--env", env_id, "--max-env-steps", "512",
                 "--set", "policy.collect.n_sample=512",
                 "--no-progress", "--run-dir", str(tmp_path / "run")]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["env_step"] == 512
    part, key = weights
    # the features are the direction one-hot (4) and the small trunk on the image (64·4·4):
    # the mission text is not an input
    first = load_checkpoint(str(tmp_path / "run"), which="final")["policy"][part][key]
    assert first.shape[1] == 4 + 64 * 4 * 4


def test_babyai_ids_resolve_without_the_mission():
    env = EnvManager("BabyAI-GoToRedBallGrey-v0", n_envs=1, seed=0, mode="sync")
    try:
        assert sorted(env.observation_space.spaces) == ["direction", "image"]
    finally:
        env.close()


def test_a_misspelt_minigrid_id_names_close_matches(capsys):
    assert main(["train", "--algo", "ppo", "--env", "MiniGrid-DoorKey-5x5-v9",
                 "--max-env-steps", "512"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "'MiniGrid-DoorKey-5x5-v0'" in err


def test_without_minigrid_the_cli_names_the_extra(monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "minigrid" else real(name, *a))
    assert main(["train", "--algo", "dqn", "--env", "MiniGrid-Empty-5x5-v0",
                 "--max-env-steps", "512"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "pip install 'rlpipe[minigrid]'" in err, err
