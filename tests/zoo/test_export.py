"""`rlpipe export` through the CLI: the written file runs in a Python that cannot import rlpipe
(onnxruntime or torch only) and acts as the run's policy on Box, Discrete and Dict observations
and with action masks; its sidecar names its inputs; what cannot be exported is refused."""
import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from rlpipe.cli import main
from rlpipe.tools.evaluate import load_run, run_env
from rlpipe.tools._export_check import policy_obs, sample_inputs, sample_masks
from rlpipe.tools._export_face import input_specs
from rlpipe.pipelines.base import make_policy

REPO = str(pathlib.Path(__file__).resolve().parents[2])
DICT_ENV = "tests.spaces.test_dict_obs_env:"
QUICK = ["--no-progress", "--seed", "1", "--set", "policy.eval.evaluator.n_episode=1",
         "--set", "env.stop_value=1e9"]

# Run in `python -I` (no PYTHONPATH, no user site) with rlpipe made unimportable: the file
# must need only numpy and onnxruntime (or torch).
STANDALONE = r"""
import json, sys
sys.modules["rlpipe"] = None  # any `import rlpipe` now fails
sys.path = [p for p in sys.path if p.rstrip("/") != sys.argv[1]]  # not its .venv inside the repo
import numpy as np
_, _, fmt, path, inputs_file, out_file = sys.argv
spec = json.load(open(path + ".json"))
data = np.load(inputs_file)
feeds = {i["name"]: data[i["name"]].astype(i["dtype"]) for i in spec["inputs"]}
if fmt == "onnx":
    import onnxruntime as ort
    action = ort.InferenceSession(path).run(["action"], feeds)[0]
else:
    import torch
    action = torch.jit.load(path)(*[torch.as_tensor(feeds[i["name"]]) for i in spec["inputs"]])
    action = action.numpy()
assert not [m for m, v in sys.modules.items() if m.startswith("rlpipe") and v is not None]
np.save(out_file, action)
"""


def _train(run_dir, *argv):
    assert main(["train", *argv, "--run-dir", str(run_dir), *QUICK]) == 0


def _export(capsys, run_dir, fmt, *extra):
    capsys.readouterr()
    assert main(["export", str(run_dir), "--format", fmt, *extra]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def _act_standalone(tmp_path, fmt, path, inputs):
    np.savez(tmp_path / "inputs.npz", **inputs)
    script = tmp_path / "standalone.py"
    script.write_text(STANDALONE)
    done = subprocess.run([sys.executable, "-I", str(script), REPO, fmt, str(path),
                           str(tmp_path / "inputs.npz"), str(tmp_path / "action.npy")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    return np.load(tmp_path / "action.npy")


def _policy_and_inputs(target, n=200, masks=False):
    """The actions of the run's policy (`target`: its folder, for best.pt, or a .pt) on `n`
    observations of its space (with masks: random ones), and those observations."""
    entry, cfg, checkpoint, _ = load_run(str(target))
    env = run_env(cfg, 1, 0, entry.policy_cls)
    try:
        policy = make_policy(cfg, entry.policy_cls, env)
    finally:
        env.close()
    policy.load_state_dict(checkpoint["policy"])
    specs = input_specs(policy.obs_space)
    inputs = sample_inputs(policy.obs_space, specs, n, seed=7)
    kwargs = {}
    if masks:
        inputs["action_mask"] = kwargs["action_mask"] = sample_masks(
            [policy.action_space.n], n, seed=7)
    expected = policy.eval_mode.forward(policy_obs(inputs, specs), **kwargs)["action"]
    return inputs, np.asarray(expected)


def test_discrete_actions_on_box_observations_match_without_rlpipe(tmp_path, capsys):
    run_dir = tmp_path / "cartpole"
    _train(run_dir, "cartpole-dqn", "--max-env-steps", "600")
    out = _export(capsys, run_dir, "onnx")
    assert out["file"] == str(run_dir / "export" / "policy.onnx") and out["max_abs_diff"] == 0
    sidecar = json.loads((run_dir / "export" / "policy.onnx.json").read_text())
    assert sidecar["inputs"] == [{"name": "obs", "shape": ["batch", 4], "dtype": "float32",
                                  "space": sidecar["inputs"][0]["space"]}]
    assert sidecar["action_space"]["n"] == 2 and sidecar["check"]["sampled_observations"] == 1000
    inputs, expected = _policy_and_inputs(run_dir)
    got = _act_standalone(tmp_path, "onnx", out["file"], inputs)
    assert got.dtype == np.int64 and (got == expected).all()


def test_continuous_actions_match_within_1e5_as_onnx_and_torchscript(tmp_path, capsys):
    run_dir = tmp_path / "pendulum"
    _train(run_dir, "--algo", "sac", "--env", "Pendulum-v1", "--max-env-steps", "400",
           "--set", "policy.model.actor_hidden=(32,)", "--set", "policy.model.critic_hidden=(32,)",
           "--set", "policy.collect.random_collect_size=200", "--set", "replay.min_samples=200")
    inputs, expected = _policy_and_inputs(run_dir / "ckpt" / "final.pt")
    for fmt in ("onnx", "torchscript"):
        out = _export(capsys, run_dir, fmt, "--which", "final", "--out",
                      str(tmp_path / f"sac.{fmt}"))
        assert out["checkpoint"].endswith("final.pt") and out["max_abs_diff"] <= 1e-5
        got = _act_standalone(tmp_path, fmt, out["file"], inputs)
        assert got.shape == expected.shape == (200, 1)
        assert np.abs(got - expected).max() <= 1e-5 and (np.abs(got) <= 2.0).all()


def test_dict_observations_give_one_named_input_per_key(tmp_path, capsys):
    run_dir = tmp_path / "dict"
    _train(run_dir, "--algo", "ppo", "--env", DICT_ENV + "make_discrete", "--max-env-steps",
           "256", "--set", "policy.model.hidden=(16,)", "--set", "policy.learn.epoch_per_collect=1")
    out = _export(capsys, run_dir, "onnx")
    assert out["inputs"] == ["flag", "image", "vec"]
    sidecar = json.loads(pathlib.Path(out["sidecar"]).read_text())
    assert [(i["shape"], i["dtype"]) for i in sidecar["inputs"]] == [
        (["batch"], "int64"), (["batch", 6, 6, 3], "uint8"), (["batch", 3], "float32")]
    inputs, expected = _policy_and_inputs(run_dir)
    assert (_act_standalone(tmp_path, "onnx", out["file"], inputs) == expected).all()


def test_masked_actions_are_an_input_and_never_chosen(tmp_path, capsys):
    run_dir = tmp_path / "masked"
    _train(run_dir, "maskedgrid-dqn", "--max-env-steps", "300")
    out = _export(capsys, run_dir, "onnx")
    assert out["inputs"] == ["obs", "action_mask"]
    inputs, expected = _policy_and_inputs(run_dir, masks=True)
    got = _act_standalone(tmp_path, "onnx", out["file"], inputs)
    assert (got == expected).all() and inputs["action_mask"][np.arange(len(got)), got].all()
    one = np.zeros_like(inputs["action_mask"])  # one valid action per row: it is the one taken
    one[np.arange(len(one)), np.arange(len(one)) % 4] = True
    got = _act_standalone(tmp_path, "onnx", out["file"], {**inputs, "action_mask": one})
    assert (got == np.arange(len(one)) % 4).all()


def test_bad_requests_are_one_line_errors(tmp_path, capsys):
    assert main(["export", str(tmp_path / "nowhere")]) == 2
    assert "does not exist" in capsys.readouterr().err
    run_dir = tmp_path / "run"
    _train(run_dir, "cartpole-dqn", "--max-env-steps", "200")
    (tmp_path / "folder").mkdir()
    capsys.readouterr()
    assert main(["export", str(run_dir), "--out", str(tmp_path / "folder")]) == 2
    err = capsys.readouterr().err
    assert "is a folder" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("missing", ["onnxscript", "onnxruntime"])
def test_onnx_without_its_packages_names_the_extra_to_install(missing, tmp_path, monkeypatch,
                                                               capsys):
    monkeypatch.setitem(sys.modules, missing, None)  # as if it were not installed
    assert main(["export", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"rlpipe export: error: rlpipe export --format onnx (or use --format torchscript) needs "
        f"{missing}, which is not installed; install it with: pip install \"rlpipe[export]\"")
    assert main(["export", str(tmp_path / "run"), "--format", "torchscript"]) == 2
    assert "does not exist" in capsys.readouterr().err  # TorchScript needs neither


@pytest.mark.parametrize("entry", ["cartpole-novel-ppo-lstm"])
def test_a_recurrent_run_is_refused_in_one_line(entry, tmp_path, capsys):
    run_dir = tmp_path / "lstm"
    _train(run_dir, entry, "--max-env-steps", "256")
    capsys.readouterr()
    assert main(["export", str(run_dir)]) == 2
    err = capsys.readouterr().err.strip()
    assert "recurrent" in err and "not supported" in err and len(err.splitlines()) == 1
    assert not (run_dir / "export").exists()
