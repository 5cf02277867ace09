"""Dict observations (uint8 image + vector + Discrete part) through every algorithm that fits,
sync and async, and an exact resume — all through the CLI."""
import json

import numpy as np
import pytest
import torch

from rlpipe.cli import main
from rlpipe.data import ReplayBuffer
from rlpipe.data._serialize import load_state
from rlpipe.middleware import load_checkpoint

ENV = "tests.spaces.test_dict_obs_env:"
SMALL = {
    "dqn": ["policy.model.hidden=(32,)", "policy.collect.random_collect_size=256",
            "replay.min_samples=256", "policy.learn.update_per_collect=8"],
    "sac": ["policy.model.actor_hidden=(32,)", "policy.model.critic_hidden=(32,)",
            "policy.collect.random_collect_size=256", "replay.min_samples=256"],
    "ppo": ["policy.model.hidden=(32,)", "policy.learn.epoch_per_collect=2"],
}
SMALL["td3"] = SMALL["sac"]
for settings in SMALL.values():  # 8 envs, 256 env steps per iteration (not the standard defaults)
    settings += ["env.n_envs=8", "policy.collect.n_sample=256"]
# DQN at its class defaults, which these checks were sized for (the generic run's standard
# defaults are SB3's: lr 1e-4, batch 32, a target copy every 2500 updates, ε over 10% of the run)
SMALL["dqn"] += ["policy.learn.lr=1e-3", "policy.learn.batch_size=64", "policy.learn.double_q=True",
                 "policy.learn.target_update_freq=500", "policy.other.eps.decay=10000",
                 "policy.other.eps.per_env_step=False", "replay.capacity=100000"]
EVAL = ["policy.eval.evaluator.n_episode=2", "env.stop_value=1e9"]


def _train(run_dir, algo, env, *extra):
    return main(["train", "--algo", algo, "--env", ENV + env, "--run-dir", str(run_dir),
                 "--no-progress", "--seed", "1",
                 *[a for s in SMALL[algo] + EVAL for a in ("--set", s)], *extra])


def _weights(run_dir):
    return load_checkpoint(str(run_dir), which="final")["policy"]


def _assert_same(a, b, path="policy"):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for key in a:
            _assert_same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b), f"{path} differs"
    else:
        assert a == b, f"{path}: {a} != {b}"


@pytest.mark.parametrize("algo,env", [("dqn", "make_discrete"), ("ppo", "make_discrete"),
                                      ("ppo", "make_continuous"), ("sac", "make_continuous"),
                                      ("td3", "make_continuous")])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_dict_observations_train_with_every_algorithm(tmp_path, algo, env, mode):
    extra = ["--async"] if mode == "async" else []
    assert _train(tmp_path / "run", algo, env, "--max-env-steps", "1024", *extra) == 0
    weights = _weights(tmp_path / "run")
    keys = [k for part in weights.values() if isinstance(part, dict) for k in part]
    # the first layer of every part was built: the small conv trunk on the 6×6×3 image and the
    # one-hot of the Discrete part feed the MLP (3 + 3 + 64·3·3 inputs)
    assert any(".parts.1.net.0.weight" in k for k in keys), keys[:8]
    mlp_in = [v for part in weights.values() if isinstance(part, dict)
              for k, v in part.items() if k.endswith("mlp.net.0.weight")]
    assert mlp_in and all(w.shape[1] == 3 + 64 * 3 * 3 + 3 for w in mlp_in)


@pytest.mark.parametrize("algo,env", [("dqn", "make_discrete"), ("ppo", "make_discrete"),
                                      ("sac", "make_continuous"), ("td3", "make_continuous")])
def test_dict_observation_run_resumes_exactly(tmp_path, algo, env):
    whole, split = tmp_path / "whole", tmp_path / "split"
    assert _train(whole, algo, env, "--max-env-steps", "1536") == 0
    assert _train(split, algo, env, "--max-env-steps", "768") == 0
    assert main(["train", "--resume", str(split), "--max-env-steps", "1536", "--no-progress"]) == 0
    _assert_same(_weights(whole), _weights(split))


def test_encoder_override_reaches_the_model_from_the_command_line(tmp_path):
    assert _train(tmp_path / "run", "dqn", "make_discrete", "--max-env-steps", "512",
                  "--set", "policy.model.encoders.image=mlp") == 0
    online = _weights(tmp_path / "run")["online"]
    assert not any("parts.1.net" in k for k in online)  # no conv trunk: the image is read flat
    assert online["encoder.mlp.net.0.weight"].shape[1] == 3 + 6 * 6 * 3 + 3


def test_dict_observations_cross_the_exchange_to_a_learner(tmp_path):
    """A collector process sends Dict-observation transitions to the learner (local backend)."""
    assert _train(tmp_path / "run", "dqn", "make_discrete", "--max-env-steps", "1024",
                  "--collectors", "1", "--backend", "local") == 0
    _check_saved_buffer(tmp_path / "run")


def _check_saved_buffer(run_dir):
    states = sorted((run_dir / "ckpt").glob("state_*/buffer.npz"))
    assert states, "no buffer.npz was checkpointed"
    buf = ReplayBuffer(load_state(str(states[-1]))["capacity"])
    buf.load(str(states[-1]))
    batch = buf.sample(8)
    assert batch["obs"]["image"].dtype == np.uint8 and batch["obs"]["image"].shape == (8, 6, 6, 3)
    assert batch["next_obs"]["flag"].dtype == np.int64 and batch["obs"]["vec"].shape == (8, 3)


def test_checkpointed_buffer_holds_dict_obs_with_uint8_images(tmp_path):
    assert _train(tmp_path / "run", "dqn", "make_discrete", "--max-env-steps", "512") == 0
    _check_saved_buffer(tmp_path / "run")


def test_unknown_encoder_kind_or_key_is_a_clear_cli_error(tmp_path, capsys):
    assert _train(tmp_path / "a", "dqn", "make_discrete", "--max-env-steps", "256",
                  "--set", "policy.model.encoders.image=cnn") == 2
    assert "model.encoders.image='cnn': unknown encoder kind; choose one of" in capsys.readouterr().err
    assert _train(tmp_path / "b", "dqn", "make_discrete", "--max-env-steps", "256",
                  "--set", "policy.model.encoders.imgae=mlp") == 2
    assert "has no part 'imgae' (its parts: ['flag', 'image', 'vec'])" in capsys.readouterr().err


@pytest.mark.slow
def test_dqn_learns_from_every_part_of_a_dict_observation(tmp_path, capsys):
    """Reward needs the Discrete part and one image pixel: chance is 8 per episode of 16,
    a model that reads only the Discrete part gets about 10.7 (2 of its 3 values decide)."""
    assert _train(tmp_path / "run", "dqn", "make_discrete", "--max-env-steps", "20000",
                  "--set", "policy.model.hidden=(64,)",
                  "--set", "policy.eval.evaluator.n_episode=10") == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["eval_value"] >= 13.0, summary
