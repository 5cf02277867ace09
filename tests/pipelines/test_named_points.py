"""A pipeline is extended at a named point without copying it: middleware given as
`after_collector` runs after the collector in every iteration and sees that iteration's
trajectories; the extended run still resumes exactly."""
import pytest
import torch

from rlpipe.middleware.ckpt import load_checkpoint
from rlpipe.pipelines import build_offpolicy, offpolicy, onpolicy, run_offpolicy, run_onpolicy
from rlpipe.pipelines.resume import prepare_resume
from rlpipe.policies import DQNPolicy, PPOPolicy

DQN_RUN = {"env": {"id": "CartPole-v1", "n_envs": 2, "eval_n_envs": 1},
           "replay": {"min_samples": 64},
           "policy": {"collect": {"random_collect_size": 64, "n_sample": 32},
                      "learn": {"update_per_collect": 4},
                      "eval": {"evaluator": {"eval_freq": 1000, "n_episode": 1}}},
           "ckpt": {"train_freq": 8}, "progress": False}


class RewardShaping:
    """Adds `bonus` to every collected reward and records how many steps it saw per iteration
    and the counter of the iteration it ran in."""

    def __init__(self, bonus=0.5):
        self.bonus, self.seen, self.iters = bonus, [], []

    def __call__(self, ctx):
        self.seen.append(len(ctx.trajectories))
        self.iters.append(ctx.total_step)
        for step in ctx.trajectories:
            step["reward"] = step["reward"] + self.bonus


def dqn_cfg(run_dir, budget, **more):
    return offpolicy.resolve_config(DQNPolicy, DQN_RUN,
                                    dict(run_dir=str(run_dir), max_env_step=budget, **more))


def policy_state(run_dir):
    return load_checkpoint(run_dir, which="final")["policy"]


def assert_same_tensors(a, b, where=""):
    if isinstance(a, torch.Tensor):
        assert torch.equal(a, b), f"{where} differs"
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            assert_same_tensors(a[key], b[key], f"{where}/{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_tensors(x, y, f"{where}/{i}")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def test_after_collector_sees_every_iterations_trajectories(tmp_path):
    shaping = RewardShaping()
    result = run_offpolicy(dqn_cfg(tmp_path / "run", 256), DQNPolicy, after_collector=[shaping])
    iterations = result["env_step"] // 32
    assert iterations == 8 and len(shaping.seen) == iterations
    assert all(n > 0 for n in shaping.seen)  # it runs after the collector filled them
    assert shaping.iters == sorted(set(shaping.iters))  # once per iteration


def test_the_shaping_middleware_changes_what_the_learner_learns(tmp_path):
    run_offpolicy(dqn_cfg(tmp_path / "plain", 256), DQNPolicy)
    run_offpolicy(dqn_cfg(tmp_path / "shaped", 256), DQNPolicy,
                  after_collector=[RewardShaping(bonus=5.0)])
    plain, shaped = policy_state(tmp_path / "plain"), policy_state(tmp_path / "shaped")
    with pytest.raises(AssertionError):
        assert_same_tensors(plain, shaped)


def test_an_extended_run_resumes_exactly(tmp_path):
    whole = tmp_path / "whole"
    run_offpolicy(dqn_cfg(whole, 512), DQNPolicy, after_collector=[RewardShaping()])
    cut = tmp_path / "cut"
    first, second = RewardShaping(), RewardShaping()
    run_offpolicy(dqn_cfg(cut, 256), DQNPolicy, after_collector=[first])
    resumed = dqn_cfg(cut, 512, resume_from=prepare_resume(str(cut)))
    result = run_offpolicy(resumed, DQNPolicy, after_collector=[second])
    assert result["env_step"] == 512
    assert len(first.seen) == len(second.seen) == 8  # the second half only, not a new run
    assert second.iters[0] == first.iters[-1] + 1
    assert_same_tensors(policy_state(whole), policy_state(cut))


def test_onpolicy_after_collector_runs_before_gae(tmp_path):
    seen = []

    def before_gae(ctx):
        seen.append((len(ctx.trajectories), ctx.train_data))

    cfg = onpolicy.resolve_config(PPOPolicy, {
        "env": {"id": "CartPole-v1", "n_envs": 2, "eval_n_envs": 1},
        "policy": {"collect": {"n_sample": 64}, "learn": {"epoch_per_collect": 1},
                   "eval": {"evaluator": {"eval_freq": 1000, "n_episode": 1}}},
        "progress": False}, dict(run_dir=None, max_env_step=128))
    run_onpolicy(cfg, PPOPolicy, after_collector=[before_gae])
    assert [n for n, _ in seen] == [64 // 2, 64 // 2]  # vector steps of 2 envs, 2 rollouts
    assert all(data is None for _, data in seen)  # gae_estimator has not made the batch yet


def test_a_named_point_takes_a_list(tmp_path):
    with pytest.raises(TypeError, match=r"after_collector= takes a list of middleware"):
        build_offpolicy(dqn_cfg(tmp_path / "run", 64), DQNPolicy, after_collector=RewardShaping())
