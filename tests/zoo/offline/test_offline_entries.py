"""The offline zoo entries: each names its data set and the commands that make it, resolves its
config, trains TD3+BC with the data set's state statistics, and (slow) learns on a small
scripted-expert data set with a looser bar than benchmarks/offline.py's."""
import json

import numpy as np
import pytest
import torch

from rlpipe.cli import main
from rlpipe.data import load_dataset
from rlpipe.runs import RunDir
from rlpipe.zoo import get_entry, list_entries
from rlpipe.pipelines.recipes import RECIPES

from .datasets import cartpole_data, pendulum_data

OFFLINE = [n for n in list_entries() if get_entry(n).pipeline == "offline"]
QUICK_EVAL = ["--set", "env.eval_n_envs=2", "--set", "policy.eval.evaluator.n_episode=2",
              "--no-progress"]


def test_the_issue_s_offline_entries_are_registered():
    assert set(OFFLINE) == {"cartpole-bc", "cartpole-cql", "pendulum-bc", "pendulum-td3bc",
                            "pendulum-iql", "pendulum-cql", "hopper-iql", "hopper-td3bc"}


@pytest.mark.parametrize("name", OFFLINE)
def test_entry_resolves_and_names_its_data_set_and_how_to_make_it(name):
    entry = get_entry(name)
    cfg = entry.resolve()
    dataset_id = cfg.dataset.id
    assert dataset_id in RECIPES, f"{name}: no recipe for its data set {dataset_id!r}"
    assert dataset_id in entry.doc.split("\n")[0]  # the `rlpipe list` line
    for line in RECIPES[dataset_id]:
        assert line in entry.doc
    assert any(" dataset collect " in line and f"--id {dataset_id}" in line
               for line in RECIPES[dataset_id])
    assert entry.resolve(overrides=["dataset.id=other/data-v0"]).dataset.id == "other/data-v0"


def test_a_missing_default_data_set_names_its_recipe(minari_root, capsys):
    assert main(["train", "pendulum-iql", "--no-progress"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "pendulum/medium-replay-v0" in line
    assert all(cmd in line for cmd in RECIPES["pendulum/medium-replay-v0"])


def test_td3bc_entry_trains_with_the_data_set_s_state_statistics(minari_root, capsys):
    pendulum_data("pendulum/tiny-v0", 2)
    assert main(["train", "pendulum-td3bc", "--set", "dataset.id=pendulum/tiny-v0",
                 "--set", "max_train_iter=4", "--set", "policy.learn.batch_size=16",
                 *QUICK_EVAL]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["train_iter"] == 4 and summary["eval_value"] is not None
    saved = torch.load(RunDir(summary["run_dir"]).final, weights_only=True)
    norm = saved["policy"]["obs_normalizer"]
    mean, std = load_dataset("pendulum/tiny-v0").obs_stats()
    np.testing.assert_allclose(np.asarray(norm["mean"]), mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(norm["std"]), std + 1e-3, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("norm", ["return_range", "none"])
def test_iql_entry_scales_rewards_by_the_data_set_s_return_range(norm, minari_root, capsys):
    pendulum_data("pendulum/tiny-v0", 2)
    assert main(["train", "pendulum-iql", "--set", "dataset.id=pendulum/tiny-v0",
                 "--set", "max_train_iter=4", "--set", "policy.learn.batch_size=16",
                 "--set", f"policy.learn.reward_norm={norm}", *QUICK_EVAL]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    saved = torch.load(RunDir(summary["run_dir"]).final, weights_only=True)
    returns = load_dataset("pendulum/tiny-v0").episode_returns
    assert returns.max() > returns.min()
    expected = 1000.0 / (returns.max() - returns.min()) if norm == "return_range" else 1.0
    assert saved["policy"]["reward_scale"] == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("name", ["hopper-iql", "hopper-td3bc"])
def test_hopper_entry_smoke(name, minari_root, capsys):
    pytest.importorskip("mujoco")
    assert main(["dataset", "collect", "random", "--env", "Hopper-v5", "--episodes", "2",
                 "--id", "hopper/random-v0", "--no-progress"]) == 0
    assert main(["train", name, "--set", "dataset.id=hopper/random-v0",
                 "--set", "max_train_iter=3", "--set", "policy.learn.batch_size=8",
                 *QUICK_EVAL]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["train_iter"] == 3 and summary["eval_value"] is not None


def _final_return(name: str, dataset_id: str, iters: int, capsys, *sets: str) -> float:
    args = ["train", name, "--set", f"dataset.id={dataset_id}", "--set",
            f"max_train_iter={iters}", "--set", f"policy.eval.evaluator.eval_freq={iters}",
            "--no-progress"]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])["eval_value"]


@pytest.mark.slow
@pytest.mark.parametrize("name,iters,bar", [("cartpole-bc", 1000, 300),
                                            ("cartpole-cql", 3000, 200)])
def test_cartpole_entry_learns_from_expert_data(name, iters, bar, minari_root, capsys):
    behaviour = cartpole_data("cartpole/expert-v0", 20, eps=0.1)
    assert behaviour > 400
    assert _final_return(name, "cartpole/expert-v0", iters, capsys) >= bar


@pytest.mark.slow
@pytest.mark.parametrize("name,iters,bar,sets", [
    ("pendulum-bc", 1500, -600, ()),
    # the entry's alpha = 100 is for its mostly random replay data; on this narrow expert data
    # it swings between -350 and -1200, the paper's 2.5 holds about -165 from 1000 updates on
    ("pendulum-td3bc", 2000, -600, ("policy.learn.alpha=2.5",)),
    ("pendulum-iql", 2000, -600, ()),
    ("pendulum-cql", 2000, -900, ())])
def test_pendulum_entry_learns_from_noisy_expert_data(name, iters, bar, sets, minari_root,
                                                      capsys):
    behaviour = pendulum_data("pendulum/noisy-expert-v0", 15, noise=0.5)
    random_policy = -1200  # about the mean return of uniform random torques
    assert behaviour > random_policy + 300
    assert _final_return(name, "pendulum/noisy-expert-v0", iters, capsys, *sets) >= bar
