"""A run stops at its env-step budget: an off-policy collector cuts its last collection to the
steps left (whole vector steps), an on-policy run ends at the first whole rollout past it and
says so in its summary and log.txt; a budget of whole collections runs exactly as before."""
import functools

import numpy as np

from rlpipe.contexts import OnlineRLContext
from rlpipe.envs import EnvManager
from rlpipe.middleware import StepCollector
from rlpipe.training import train
from rlpipe.pipelines.tail import format_summary
from tests.envs.env_fakes import CountingEnv
from tests.middleware.fakes import FakeCollectPolicy
from tests.recurrent.test_acting_state import cfg

QUICK = ["policy.eval.evaluator.n_episode=2"]


def _collections(n_envs, n_sample, budget, iterations):
    """The env steps of each collection and the obs each one acted on."""
    env = EnvManager(functools.partial(CountingEnv, 5), n_envs=n_envs, seed=0, mode="sync")
    collector = StepCollector(cfg(n_sample=n_sample), FakeCollectPolicy(), env,
                              max_env_step=budget)
    ctx, sizes, seen = OnlineRLContext(), [], []
    for _ in range(iterations):
        before = ctx.env_step
        gen = collector(ctx)
        next(gen)
        next(gen, None)
        sizes.append(ctx.env_step - before)
        seen.append(np.stack([step["obs"] for step in ctx.trajectories]))
    env.close()
    return sizes, seen


def test_the_last_collection_is_cut_to_the_steps_left():
    sizes, _ = _collections(n_envs=2, n_sample=8, budget=12, iterations=2)
    assert sizes == [8, 4]
    sizes, _ = _collections(n_envs=3, n_sample=8, budget=11, iterations=2)
    assert sizes == [9, 3]  # whole vector steps: 11 - 9 = 2 left is one step of 3 envs


def test_a_budget_of_whole_collections_collects_as_without_one():
    # n_sample 8 over 3 envs collects 9 per iteration: a budget of 18 is two whole ones
    sizes, seen = _collections(n_envs=3, n_sample=8, budget=18, iterations=2)
    free_sizes, free_seen = _collections(n_envs=3, n_sample=8, budget=None, iterations=2)
    assert sizes == free_sizes == [9, 9]
    for a, b in zip(seen, free_seen):
        np.testing.assert_array_equal(a, b)


def test_an_offpolicy_run_ends_at_its_budget(tmp_path):
    result = train("cartpole-dqn", max_env_step=300, run_dir=str(tmp_path / "a"), progress=False,
                   overrides=QUICK + ["env.n_envs=4"])
    assert result["env_step"] == 300 and result["budget_note"] is None
    assert "rounded" not in format_summary(result)
    result = train("cartpole-dqn", max_env_step=300, run_dir=str(tmp_path / "b"), progress=False,
                   overrides=QUICK)  # 8 envs: 300 is not whole vector steps
    assert 300 < result["env_step"] < 300 + 8
    assert (f"budget reached (max_env_step=300, rounded up to {result['env_step']} env steps: "
            f"whole vector steps of 8 envs)") in format_summary(result)


def test_an_onpolicy_run_rounds_up_to_whole_rollouts_and_says_so(tmp_path):
    result = train("cartpole-ppo", max_env_step=300, run_dir=str(tmp_path), progress=False,
                   overrides=QUICK + ["policy.collect.n_sample=128", "policy.learn.batch_size=128",
                                      "policy.learn.epoch_per_collect=1"])
    assert result["env_step"] == 384  # three rollouts of 128
    assert result["budget_note"] == "rounded up to 384 env steps: whole rollouts of 128 env steps"
    assert result["budget_note"] in format_summary(result)
    log = (tmp_path / "log.txt").read_text()
    assert ("max_env_step=300 is not a whole number of rollouts of 128 env steps "
            "(policy.collect.n_sample=128 over 8 envs): the run ends after 3 rollouts, at 384 "
            "env steps") in log
