"""docs/new_algorithm.md's REINFORCE policy beyond the doc's own run (tests/docs/test_docs.py runs
every block): the collect face's `value` hook it relies on, its spaces, its pipeline attribute,
async mode, the zoo's on-policy runner with checkpoints (what a generic `rlpipe train --algo`
entry runs), the doc's CLI lines from a folder holding reinforce.py (skipped while the CLI has no
`--algo`), and the seeds the doc quotes (slow)."""
from __future__ import annotations

import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
from typing import Any, Dict, List

import gymnasium as gym
import numpy as np
import pytest
import torch
from easydict import EasyDict

from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import Task
from rlpipe.envs import EnvManager
from rlpipe.middleware import (StepCollector, gae_estimator, interaction_evaluator,
                               load_checkpoint, multistep_trainer)
from rlpipe.policies import (DQNPolicy, Policy, PPOPolicy, UnsupportedSpaceError, get_policy,
                             policy_names)
from rlpipe.pipelines.onpolicy import resolve_config, run_onpolicy

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "new_algorithm.md"
BOX4 = gym.spaces.Box(-5.0, 5.0, (4,), np.float32)


def _block(fence: str, marker: str) -> str:
    """The one block of the doc fenced as ```<fence> (a regex) that contains `marker`."""
    pattern = rf"^```{fence}\n(.*?)^```"
    found = [b for b in re.findall(pattern, DOC.read_text(encoding="utf-8"), re.S | re.M)
             if marker in b]
    assert len(found) == 1, f"docs/new_algorithm.md: {len(found)} ```{fence} blocks hold {marker!r}"
    return found[0]


def _policy_class() -> type:
    """Execute the doc's policy block (the one defining `class Reinforce`) and return the class."""
    namespace: Dict[str, Any] = {"__name__": "reinforce"}
    source = _block("python", "class Reinforce(Policy)")
    exec(compile(source, f"{DOC}:Reinforce", "exec"), namespace)  # noqa: S102 - our own doc
    return namespace["Reinforce"]


@pytest.fixture(scope="module")
def reinforce() -> type:
    cls = _policy_class()
    assert issubclass(cls, Policy)
    return cls


def test_collect_face_shows_the_policys_value_method(reinforce):
    policy = reinforce({"seed": 0}, BOX4, gym.spaces.Discrete(2))
    obs = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)
    np.testing.assert_array_equal(policy.collect_mode.value(obs), policy.value(obs))
    assert policy.collect_mode.value(obs).shape == (6,)


def test_collect_face_without_value_says_how_to_add_one():
    dqn = DQNPolicy({"seed": 0}, BOX4, gym.spaces.Discrete(2))
    assert getattr(dqn.collect_mode, "value", None) is None
    with pytest.raises(AttributeError, match=r"DQNPolicy has no value\(obs\).*define value"):
        dqn.collect_mode.value  # noqa: B018 - the attribute access is the test
    ppo = PPOPolicy({"seed": 0}, BOX4, gym.spaces.Discrete(2))  # PPO's own face keeps its value
    obs = np.zeros((3, 4), np.float32)
    np.testing.assert_array_equal(ppo.collect_mode.value(obs), ppo.value(obs))


def test_reinforce_refuses_box_actions_naming_the_alternative(reinforce):
    with pytest.raises(UnsupportedSpaceError, match=r"--algo ppo"):
        reinforce({}, BOX4, gym.spaces.Box(-1.0, 1.0, (1,), np.float32))


def test_it_declares_the_pipeline_name_ppo_uses(reinforce):
    """The generic `--algo` entry picks its pipeline from the class attribute `pipeline`; the doc's
    value must be the one PPO, the built-in on-policy algorithm, declares."""
    assert reinforce.pipeline == getattr(PPOPolicy, "pipeline", "on-policy") == "on-policy"


def test_the_registration_block_registers_it(reinforce):
    namespace: Dict[str, Any] = {"Reinforce": reinforce}
    exec(_block("python", 'register_policy("reinforce"'), namespace)  # noqa: S102 - our own doc
    assert get_policy("reinforce") is reinforce and "reinforce" in policy_names()


def _train(cls: type, seed: int, iterations: int, async_mode: bool = False,
           n_sample: int = 1024) -> OnlineRLContext:
    """Section 3 of the doc with the seed as a parameter (the evaluator's envs: seed + 100)."""
    collector_env = EnvManager("CartPole-v1", n_envs=8, seed=seed)
    evaluator_env = EnvManager("CartPole-v1", n_envs=5, seed=seed + 100)
    policy = cls({"seed": seed, "collect": {"n_sample": n_sample},
                  "eval": {"evaluator": {"eval_freq": 10, "n_episode": 10}}},
                 collector_env.observation_space, collector_env.action_space)
    cfg = EasyDict(policy=policy.cfg)
    task = Task()
    try:
        with task.start(async_mode=async_mode, ctx=OnlineRLContext()):
            task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
            task.use(StepCollector(cfg, policy.collect_mode, collector_env))
            task.use(gae_estimator(cfg, policy.collect_mode))
            task.use(multistep_trainer(cfg, policy.learn_mode))
            task.run(max_step=iterations)
            return task.ctx
    finally:
        evaluator_env.close()


def test_async_mode_runs_the_same_pipeline(reinforce):
    torch.set_num_threads(1)
    ctx = _train(reinforce, seed=0, iterations=3, async_mode=True, n_sample=256)
    assert ctx.train_iter == 3
    assert ctx.env_step == 3 * 256
    assert set(ctx.train_output) == {"policy_loss", "value_loss"}


def test_zoo_onpolicy_runner_trains_saves_and_reloads_it(reinforce, tmp_path):
    """What a generic `rlpipe train --algo reinforce --env CartPole-v1` entry would run."""
    torch.set_num_threads(1)
    cfg = resolve_config(reinforce, {"env": {"id": "CartPole-v1", "n_envs": 4, "eval_n_envs": 2},
                                     "policy": {"collect": {"n_sample": 256},
                                                "eval": {"evaluator": {"n_episode": 2}}},
                                     "max_env_step": 1024, "ckpt": {"train_freq": 2},
                                     "progress": False, "run_dir": str(tmp_path)})
    assert cfg.policy.learn.gae_lambda == 1.0  # the policy's defaults reach the estimator
    result = run_onpolicy(cfg, reinforce)
    assert result["env_step"] == 1024 and result["train_iter"] == 4
    assert np.isfinite(result["eval_value"])

    ckpt = load_checkpoint(tmp_path)  # torch.load(weights_only=True) inside
    assert ckpt["policy"]["train_iter"] == 4
    fresh = reinforce({"seed": 123}, BOX4, gym.spaces.Discrete(2))
    fresh.load_state_dict(ckpt["policy"])
    obs = np.random.default_rng(1).normal(size=(16, 4)).astype(np.float32)
    for name, tensor in fresh.pi.state_dict().items():
        torch.testing.assert_close(tensor, ckpt["policy"]["pi"][name])
    assert fresh.eval_mode.forward(obs)["action"].shape == (16,)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_reinforce_learns_cartpole_on_every_quoted_seed(reinforce, seed):
    """The doc says seeds 0-4 end at a mean greedy return of 207-500 after 40 iterations and
    asserts > 150 for seed 0; each seed must clear that bar (a random policy scores ~22)."""
    torch.set_num_threads(1)
    ctx = _train(reinforce, seed=seed, iterations=40)
    print(f"seed {seed}: final mean eval return {ctx.last_eval_value:.0f}")
    assert ctx.last_eval_value > 150


def _cli(argv: List[str], cwd: pathlib.Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    return subprocess.run([sys.executable, "-m", "rlpipe.cli", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_cli_lines_train_it_from_the_folder_of_reinforce_py(tmp_path):
    """Section 5's `rlpipe train --algo ...` lines, with a tiny budget, from a folder holding
    reinforce.py (the policy block and the registration block)."""
    if "--algo" not in _cli(["train", "--help"], tmp_path).stdout:
        pytest.skip("this rlpipe has no `rlpipe train --algo` yet; the doc's CLI lines wait "
                    "for it (they are a ```bash no-run block until then)")
    (tmp_path / "reinforce.py").write_text(
        _block("python", "class Reinforce(Policy)") + "\n\n"
        + _block("python", 'register_policy("reinforce"'), encoding="utf-8")
    lines = [ln for ln in _block("bash(?: no-run)?", "rlpipe train").splitlines()
             if ln.startswith("rlpipe train")]
    assert len(lines) == 2
    for i, line in enumerate(lines):
        run_dir = tmp_path / f"run{i}"
        done = _cli([*shlex.split(line)[1:], "--max-env-steps", "2048", "--no-progress",
                     "--run-dir", str(run_dir)], tmp_path)
        assert done.returncode == 0, f"`{line}` failed:\n{done.stderr[-3000:]}"
        saved = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
        assert "Reinforce" in json.dumps(saved), f"`{line}`: config.json does not name Reinforce"
        assert list((run_dir / "ckpt").glob("*.pt")), f"`{line}` wrote no checkpoint"
