"""PPO on MultiDiscrete and MultiBinary actions: distributions against hand-computed values,
the policy's three faces, and training through the CLI on the small envs of
test_action_spaces_envs.py."""
import json
import math
import pathlib

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlpipe.cli import main
from rlpipe.models import ActorCritic
from rlpipe.models.distributions import MultiBernoulli, MultiCategorical, action_distribution
from rlpipe.policies import get_policy

from .test_action_spaces_envs import EPISODE_LEN, TARGET_BITS

ENVS = "tests.spaces.test_action_spaces_envs"
SHORT = ["--no-progress", "--set", "env.n_envs=4", "--set", "env.eval_n_envs=2",
         "--set", "policy.collect.n_sample=256", "--set", "policy.eval.evaluator.n_episode=4"]


def _summary(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_multicategorical_log_prob_and_entropy_are_sums_over_components():
    # component 0: logits (0, ln 3) → p = (1/4, 3/4); component 1: uniform over 3
    logits = torch.tensor([[0.0, math.log(3.0), 0.0, 0.0, 0.0]])
    dist = MultiCategorical(logits, [2, 3])
    assert dist.log_prob(torch.tensor([[1, 2]])).item() == pytest.approx(
        math.log(0.75) + math.log(1 / 3), abs=1e-6)
    h0 = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    assert dist.entropy().item() == pytest.approx(h0 + math.log(3.0), abs=1e-6)
    assert dist.mode.tolist() == [[1, 0]]


def test_multibernoulli_log_prob_and_entropy_are_sums_over_bits():
    # p = sigmoid(logit) = (1/2, 3/4, 1/5)
    logits = torch.tensor([[0.0, math.log(3.0), math.log(0.25)]])
    dist = MultiBernoulli(logits)
    action = torch.tensor([[1.0, 0.0, 0.0]])
    assert dist.log_prob(action).item() == pytest.approx(
        math.log(0.5) + math.log(0.25) + math.log(0.8), abs=1e-6)

    def h(p):
        return -(p * math.log(p) + (1 - p) * math.log(1 - p))

    assert dist.entropy().item() == pytest.approx(h(0.5) + h(0.75) + h(0.2), abs=1e-6)
    assert dist.mode.tolist() == [[0.0, 1.0, 0.0]]


def test_sampling_with_a_generator_follows_the_probabilities():
    gen = torch.Generator().manual_seed(0)
    bits = MultiBernoulli(torch.tensor([[math.log(3.0), -20.0]]).expand(4000, 2))
    freq = bits.sample_with(gen).mean(0)
    assert freq[0].item() == pytest.approx(0.75, abs=0.03) and freq[1].item() == 0.0
    cats = MultiCategorical(torch.tensor([[0.0, math.log(3.0), 0.0, 20.0]]).expand(4000, 4), [2, 2])
    draws = cats.sample_with(gen)
    assert draws[:, 0].float().mean().item() == pytest.approx(0.75, abs=0.03)
    assert (draws[:, 1] == 1).all()


@pytest.mark.parametrize("space, size", [(gym.spaces.Discrete(5), 5),
                                         (gym.spaces.MultiDiscrete([2, 3, 4]), 9),
                                         (gym.spaces.MultiBinary(6), 6)])
def test_head_size_per_space(space, size):
    assert action_distribution(space).size == size


@pytest.mark.parametrize("space", [gym.spaces.MultiDiscrete([[2, 3], [2, 3]]),
                                   gym.spaces.MultiBinary([2, 2])])
def test_multi_dimensional_parts_are_refused_with_how_to_fix(space):
    with pytest.raises(ValueError, match="must be 1-D.*flatten"):
        ActorCritic(gym.spaces.Box(-1, 1, (3,)), space)


@pytest.mark.parametrize("space", [gym.spaces.MultiDiscrete([3, 4], start=[1, -2]),
                                   gym.spaces.MultiBinary(4)])
def test_ppo_collect_and_eval_give_actions_inside_the_space_and_learn_reads_them(space):
    obs_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    policy = get_policy("ppo")({"seed": 0, "learn": {"batch_size": 8, "epoch_per_collect": 1}},
                               obs_space, space)
    obs = np.random.default_rng(0).uniform(-1, 1, (16, 3)).astype(np.float32)
    out = policy.collect_mode.forward(obs)
    assert out["action"].shape == (16, *space.shape) and out["action"].dtype == space.dtype
    assert all(space.contains(a) for a in out["action"])
    assert "raw_action" not in out
    greedy = policy.eval_mode.forward(obs)["action"]
    assert greedy.shape == (16, *space.shape) and all(space.contains(a) for a in greedy)
    # the stored log-prob is that of the env's action (offsets undone by the learner)
    with torch.no_grad():
        dist, _ = policy.model(torch.as_tensor(obs))
        assert np.allclose(dist.log_prob(policy._net_action(torch.as_tensor(out["action"])))
                           .numpy(), out["logp"], atol=1e-5)
    batch = {**out, "obs": obs, "adv": np.ones(16, np.float32), "return": out["value"]}
    stats = policy.learn_mode.forward(batch)
    assert stats["approx_kl"] == pytest.approx(0.0, abs=1e-6)  # first minibatch: ratio 1
    assert stats["entropy"] > 0


@pytest.mark.slow
def test_ppo_learns_a_bit_pattern_with_multibinary_actions(tmp_path, capsys):
    run_dir = tmp_path / "bits"
    assert main(["train", "--algo", "ppo", "--env", f"{ENVS}:make_bits", "--run-dir",
                 str(run_dir), "--max-env-steps", "2000", *SHORT]) == 0
    assert _summary(capsys)["eval_value"] >= EPISODE_LEN - 1  # random: EPISODE_LEN / 2
    assert main(["eval", str(run_dir), "--episodes", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["mean_return"] == EPISODE_LEN  # greedy: all bits
    assert TARGET_BITS.dtype == np.int8


@pytest.mark.slow
def test_ppo_learns_cue_answers_with_multidiscrete_actions(tmp_path, capsys):
    run_dir = tmp_path / "pick"
    assert main(["train", "--algo", "ppo", "--env", f"{ENVS}:make_pick", "--run-dir",
                 str(run_dir), "--max-env-steps", "4000", *SHORT]) == 0
    # random answers earn 0.29 per step; right answers 1
    assert _summary(capsys)["eval_value"] >= EPISODE_LEN - 1.5


def test_multidiscrete_run_trains_evaluates_and_resumes_through_the_cli(tmp_path, capsys):
    run_dir = tmp_path / "pick"
    assert main(["train", "--algo", "ppo", "--env", f"{ENVS}:make_pick", "--run-dir",
                 str(run_dir), "--max-env-steps", "200", *SHORT]) == 0
    assert _summary(capsys)["train_iter"] > 0
    assert main(["eval", str(run_dir), "--episodes", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["episodes"] == 2
    assert main(["train", "--resume", str(run_dir), "--max-env-steps", "400",
                 "--no-progress"]) == 0
    assert _summary(capsys)["env_step"] >= 400


def test_async_collection_carries_multibinary_actions(tmp_path, capsys):
    assert main(["train", "--algo", "ppo", "--env", f"{ENVS}:make_bits", "--async",
                 "--run-dir", str(tmp_path / "run"), "--max-env-steps", "300", *SHORT]) == 0
    assert _summary(capsys)["env_step"] >= 300
    assert pathlib.Path(tmp_path / "run" / "config.json").exists()
