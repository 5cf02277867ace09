"""gae_estimator and multistep_trainer: GAE from collected steps, bootstrapping, the trainer."""
import math

import gymnasium as gym
import numpy as np
import pytest
from easydict import EasyDict

from rlpipe.contexts import OnlineRLContext
from rlpipe.data import compute_gae
from rlpipe.engine import Task, contract_of
from rlpipe.middleware import (NonFiniteLossError, StepCollector, gae_estimator,
                               multistep_trainer, trainer)
from rlpipe.middleware.onpolicy import rollout_to_batch
from rlpipe.policies import PPOPolicy

from .fakes import FakeEnvManager


def cfg(**learn):
    base = dict(gamma=0.5, gae_lambda=0.8, **learn)
    return EasyDict(policy=dict(collect=dict(n_sample=6, random_collect_size=0),
                                learn=base), env=dict(stop_value=None))


def step(obs, reward, next_obs, terminated=(False,), truncated=(False,), value=None, valid=None):
    n = len(reward)
    out = {"obs": np.asarray(obs, np.float32).reshape(n, 1),
           "action": np.zeros(n, np.int64),
           "reward": np.asarray(reward, np.float32),
           "next_obs": np.asarray(next_obs, np.float32).reshape(n, 1),
           "terminated": np.asarray(terminated, bool), "truncated": np.asarray(truncated, bool),
           "valid": np.ones(n, bool) if valid is None else np.asarray(valid, bool)}
    if value is not None:
        out["value"] = np.asarray(value, np.float32)
    return out


def value_of_obs(obs):
    """V(obs) = 10 · obs: easy to check by hand."""
    return 10.0 * np.asarray(obs, np.float32)[:, 0]


def test_truncated_and_last_steps_bootstrap_from_the_value_of_next_obs():
    # one env: obs 1 → 2 (truncated, true final obs 3) | reset obs 7 → 8 (last step of rollout)
    steps = [step([1], [1.0], [2], value=[10.0]),
             step([2], [1.0], [3], truncated=[True], value=[20.0]),
             step([7], [1.0], [8], value=[70.0])]
    calls = []

    def value_fn(obs):
        calls.append(np.asarray(obs).copy())
        return value_of_obs(obs)

    batch = rollout_to_batch(steps, gamma=0.5, lam=1.0, value_fn=value_fn)
    assert len(calls) == 1  # one batched call, for the truncated step and the last step only
    np.testing.assert_array_equal(calls[0][:, 0], [3, 8])
    # deltas: 1 + 0.5·20 − 10 = 1; 1 + 0.5·30 − 20 = −4; 1 + 0.5·80 − 70 = −29
    np.testing.assert_allclose(batch["adv"], [1 + 0.5 * -4, -4, -29])
    np.testing.assert_allclose(batch["return"], batch["adv"] + np.array([10, 20, 70]))
    assert "next_obs" not in batch and "valid" not in batch
    assert set(batch) >= {"obs", "action", "reward", "value", "adv", "return"}


def test_terminated_steps_do_not_bootstrap():
    steps = [step([1], [1.0], [2], terminated=[True], value=[10.0]),
             step([5], [1.0], [6], terminated=[True], value=[50.0])]
    batch = rollout_to_batch(steps, gamma=0.9, lam=0.9, value_fn=None)  # no value needed
    np.testing.assert_allclose(batch["adv"], [1 - 10, 1 - 50])


def test_matches_compute_gae_over_several_envs_and_drops_invalid_rows():
    rng = np.random.default_rng(0)
    T, N = 6, 3
    obs = rng.normal(size=(T, N)).astype(np.float32)
    next_obs = np.roll(obs, -1, axis=0)
    next_obs[-1] = rng.normal(size=N)
    trunc = np.zeros((T, N), bool)
    trunc[2, 0] = True
    next_obs[2, 0] = 42.0  # the true final obs differs from the next row's obs
    term = np.zeros((T, N), bool)
    term[3, 1] = True
    valid = np.ones((T, N), bool)
    valid[4, 2] = False
    reward = rng.normal(size=(T, N)).astype(np.float32)
    steps = [step(obs[t], reward[t], next_obs[t], term[t], trunc[t], value_of_obs(obs[t][:, None]),
                  valid[t]) for t in range(T)]
    batch = rollout_to_batch(steps, gamma=0.9, lam=0.8, value_fn=value_of_obs)
    values = 10 * obs
    expected_next = 10 * next_obs  # = the next row's value where the episode goes on
    adv, ret = compute_gae(reward, values, expected_next, term, trunc, 0.9, 0.8, valid=valid)
    rows = valid.reshape(-1)  # step-major: row t·N + env
    np.testing.assert_array_equal(batch["adv"], adv.reshape(-1)[rows])  # the same numbers, bit
    np.testing.assert_array_equal(batch["return"], ret.reshape(-1)[rows])  # for bit
    np.testing.assert_array_equal(batch["obs"][:, 0], obs.reshape(-1)[rows])
    np.testing.assert_array_equal(batch["value"], values.reshape(-1)[rows])
    assert batch["adv"].dtype == batch["return"].dtype == np.float32
    assert len(batch["obs"]) == T * N - 1


def test_values_are_computed_when_the_steps_carry_none_and_rewards_are_scaled():
    steps = [step([1], [2.0], [2]), step([2], [2.0], [3], terminated=[True])]
    batch = rollout_to_batch(steps, gamma=1.0, lam=1.0, value_fn=value_of_obs, reward_scale=0.5)
    np.testing.assert_allclose(batch["value"], [10, 20])
    np.testing.assert_allclose(batch["reward"], [1.0, 1.0])
    np.testing.assert_allclose(batch["return"], [2.0, 1.0])


def test_clear_errors():
    steps = [step([1], [1.0], [2], value=[1.0])]
    with pytest.raises(ValueError, match="value"):
        rollout_to_batch(steps, 0.9, 0.9, value_fn=None)  # the last step needs V(next_obs)
    mixed = [step([1], [1.0], [2]), step([2], [1.0], [3], value=[1.0])]
    with pytest.raises(KeyError, match="random_collect_size"):
        rollout_to_batch(mixed, 0.9, 0.9, value_fn=value_of_obs)
    with pytest.raises(ValueError, match="one value per row"):
        rollout_to_batch(steps, 0.9, 0.9, value_fn=lambda obs: np.zeros(5))


def test_gae_estimator_reads_trajectories_writes_train_data():
    class Face:
        value = staticmethod(value_of_obs)

    estimator = gae_estimator(cfg(), Face())
    c = contract_of(estimator)
    assert c.reads == {"trajectories"} and c.writes == {"train_data"}
    ctx = OnlineRLContext()
    estimator(ctx)
    assert ctx.train_data is None
    ctx.trajectories = [step([1], [1.0], [2], value=[10.0])]
    estimator(ctx)
    np.testing.assert_allclose(ctx.train_data["adv"], [1 + 0.5 * 20 - 10])


class CountingLearner:
    def __init__(self, stats):
        self.stats = stats
        self.batches = []

    def forward(self, batch):
        self.batches.append(batch)
        return dict(self.stats)


@pytest.mark.parametrize("make", [multistep_trainer, trainer])
def test_the_trainer_under_either_name_counts_gradient_steps_and_checks_for_nan(make):
    learner = CountingLearner({"policy_loss": 0.1, "n_updates": 7})
    train = make(cfg(), learner)
    c = contract_of(train)
    assert c.reads == {"train_data", "train_iter"} and c.writes == {"train_output", "train_iter"}
    ctx = OnlineRLContext()
    train(ctx)  # no data: nothing happens
    assert ctx.train_iter == 0 and not learner.batches
    ctx.train_data = {"adv": np.zeros(3)}
    train(ctx)
    assert ctx.train_iter == 7 and ctx.train_output["policy_loss"] == 0.1
    make(cfg(), CountingLearner({"loss": 1.0}))(ctx)  # no n_updates: counts 1
    assert ctx.train_iter == 8
    bad = make(cfg(), CountingLearner({"value_loss": math.nan, "n_updates": 1}))
    with pytest.raises(NonFiniteLossError, match=f"^{make.__name__}: 'value_loss'"):
        bad(ctx)


def test_on_policy_pipeline_with_a_real_ppo_policy():
    env = FakeEnvManager(n_envs=2, length=4)
    run_cfg = cfg(epoch_per_collect=2, batch_size=4)
    policy = PPOPolicy({"seed": 0, **run_cfg.policy}, env.observation_space, env.action_space)
    task = Task()
    with task.start(ctx=OnlineRLContext()):
        task.use(StepCollector(run_cfg, policy.collect_mode, env))
        task.use(gae_estimator(run_cfg, policy.collect_mode))
        task.use(multistep_trainer(run_cfg, policy.learn_mode))
        task.run(max_step=3)
        ctx = task.ctx
    assert ctx.env_step == 18 and ctx.train_iter == policy.train_iter == 3 * 2 * 2
    assert set(ctx.train_output) >= {"policy_loss", "value_loss", "entropy", "approx_kl", "lr"}


def test_box_actions_keep_the_raw_sample_for_the_learner():
    env = FakeEnvManager(n_envs=2, length=3)
    env.action_space = gym.spaces.Box(-0.1, 0.1, (1,), np.float32)
    run_cfg = cfg(epoch_per_collect=1, batch_size=8)
    policy = PPOPolicy({"seed": 0, **run_cfg.policy}, env.observation_space, env.action_space)
    ctx = OnlineRLContext()
    collect = StepCollector(run_cfg, policy.collect_mode, env)(ctx)
    next(collect)
    gae_estimator(run_cfg, policy.collect_mode)(ctx)
    batch = ctx.train_data
    assert np.abs(batch["action"]).max() <= 0.1 < np.abs(batch["raw_action"]).max()
    stats = multistep_trainer(run_cfg, policy.learn_mode)
    stats(ctx)
    assert ctx.train_iter == 1


def test_nested_observations_reach_value_fn_as_dicts_of_rows():
    def nested(o, next_o, truncated=(False, False)):
        s = step([o, o + 1], [1.0, 1.0], [next_o, next_o + 1], (False, False), truncated)
        s["obs"] = {"pos": s["obs"], "id": np.array([[0], [1]], np.int64)}
        s["next_obs"] = {"pos": s["next_obs"], "id": np.array([[0], [1]], np.int64)}
        return s

    seen = []

    def value_fn(obs):
        seen.append(sorted(obs))
        return 10.0 * obs["pos"][:, 0] + obs["id"][:, 0]

    steps = [nested(1, 2), nested(2, 3, truncated=(True, False))]
    batch = rollout_to_batch(steps, gamma=0.5, lam=1.0, value_fn=value_fn)
    assert seen == [["id", "pos"], ["id", "pos"]]  # V(obs) of every row, then V(next_obs) rows
    np.testing.assert_array_equal(batch["value"], [10, 21, 20, 31])
    np.testing.assert_array_equal(batch["obs"]["id"][:, 0], [0, 1, 0, 1])
    # env 0: step 2 truncated → 1 + 0.5·V(3) − V(2) = −4; step 1: 1 + 0.5·20 − 10 + 0.5·(−4) = −1
    np.testing.assert_array_equal(batch["adv"][[0, 2]], [-1.0, -4.0])
