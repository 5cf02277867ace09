"""Exact resume of an offline run: the data set's sampling state and train_iter travel with
every checkpoint, so a stopped (or killed) run resumed ends with the weights of an
uninterrupted one, bit for bit."""
import json

import pytest
import torch

from rlpipe.middleware import load_checkpoint
from rlpipe.runs import DATASET_FILE, RunDir
from rlpipe.training import resume, train

from .datasets import cartpole_data

COMMON = ["policy.eval.evaluator.eval_freq=50", "ckpt.train_freq=50", "env.stop_value=None",
          "policy.learn.batch_size=32", "policy.learn.target_update_freq=20",
          "policy.eval.evaluator.n_episode=2", "env.eval_n_envs=2"]


def _run(run_dir, budget):
    return train(algo="dqn", dataset="cartpole/resume-v0", run_dir=run_dir, progress=False,
                 overrides=COMMON + [f"max_train_iter={budget}"])


def _weights(run_dir):
    return load_checkpoint(RunDir(run_dir).final)["policy"]


def _same(a, b):
    return all(torch.equal(a[net][k], b[net][k]) for net in ("online", "target")
               for k in a[net]) and a["optimizer"]["state"].keys() == b["optimizer"]["state"].keys()


@pytest.mark.parametrize("killed", [False, True], ids=["stopped", "killed"])
def test_resume_gives_the_weights_of_an_uninterrupted_run(minari_root, killed):
    cartpole_data("cartpole/resume-v0", 2)
    whole = _run("whole", 150)
    _run("parts", 120 if killed else 100)
    run = RunDir("parts")
    state = json.loads(run.dataset_file(run.read_manifest("final.pt")["state_dir"]).read_text())
    assert state["kind"] == "OfflineDataset" and state["position"] > 0  # mid-epoch
    manifest = run.read_manifest("final.pt")
    assert f"{manifest['state_dir']}/{DATASET_FILE}" in manifest["files"]  # hashed and signed
    if killed:  # killed after iter_100.pt: final.pt (at 120) never got written
        for name in ("final.pt", "final.manifest.json", "latest.json"):
            run.checkpoint(name).unlink()
    parts = resume("parts", overrides=["max_train_iter=150"], progress=False)
    assert parts["train_iter"] == whole["train_iter"] == 150
    assert _same(_weights("whole"), _weights("parts"))
    assert parts["eval_value"] == whole["eval_value"]  # the eval envs resumed exactly too


def test_a_changed_data_set_is_refused_on_resume(minari_root):
    cartpole_data("cartpole/resume-v0", 1)
    cartpole_data("cartpole/other-v0", 1, seed=3)
    _run("run", 50)
    with pytest.raises(ValueError, match="dataset.id=cartpole/other-v0 cannot change a run"):
        resume("run", overrides=["dataset.id=cartpole/other-v0", "max_train_iter=100"],
               progress=False)
    with pytest.raises(ValueError, match="max_train_iter 50 train iterations"):
        resume("run", progress=False)
