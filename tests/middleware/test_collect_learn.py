import math

import numpy as np
import pytest
from easydict import EasyDict

from rlpipe.contexts import OnlineRLContext
from rlpipe.data import ReplayBuffer, SampleRatioController
from rlpipe.engine import Task
from rlpipe.middleware import (EpisodeCollector, NonFiniteLossError, OffPolicyLearner,
                               StepCollector, concat_steps, data_pusher, eps_greedy_handler,
                               epsilon_schedule, inferencer, interaction_evaluator,
                               offpolicy_data_fetcher, rolloutor, trainer)

from .fakes import FakeCollectPolicy, FakeEnvManager, FakeLearnPolicy


def cfg(**policy):
    base = dict(collect=dict(n_sample=6, random_collect_size=0, n_episode=3),
                learn=dict(batch_size=4, update_per_collect=3, nstep=2, gamma=0.5),
                other=dict(eps=dict(type="linear", start=1.0, end=0.1, decay=100)),
                eval=dict(evaluator=dict(eval_freq=10, n_episode=4)))
    base.update(policy)
    return EasyDict(dict(policy=base, env=dict(stop_value=None)))


def run_generator(mw, ctx):
    out = mw(ctx)
    if hasattr(out, "__next__"):
        next(out, None)
        next(out, None)


def test_step_collector_collects_n_sample_and_counts():
    env, policy = FakeEnvManager(n_envs=2, length=5), FakeCollectPolicy()
    collector = StepCollector(cfg(), policy, env)
    ctx = OnlineRLContext()
    run_generator(collector, ctx)
    assert len(ctx.trajectories) == 3  # 6 samples over 2 envs
    assert ctx.env_step == 6
    assert policy.refreshes == 2  # before the first collection and after the iteration
    step = ctx.trajectories[0]
    assert set(step) >= {"obs", "action", "reward", "next_obs", "terminated", "truncated",
                         "valid", "value"}
    np.testing.assert_array_equal(step["next_obs"][:, 1], [1, 1])


def test_step_collector_reports_episode_ends_and_keeps_obs_between_calls():
    env, policy = FakeEnvManager(n_envs=2, length=4), FakeCollectPolicy()
    collector = StepCollector(cfg(), policy, env)
    ctx = OnlineRLContext()
    run_generator(collector, ctx)  # 3 vector steps
    ctx = ctx.renew()
    run_generator(collector, ctx)  # steps 4..6: the episodes end at the 4th
    assert ctx.env_episode == 2 and ctx.env_step == 12
    assert [e["length"] for e in ctx.episode_info] == [4, 4]
    first = ctx.trajectories[0]
    np.testing.assert_array_equal(first["obs"][:, 1], [3, 3])  # continued, not reset
    assert first["truncated"].all() and not first["terminated"].any()


def test_random_warmup_ignores_the_policy():
    env, policy = FakeEnvManager(n_envs=2), FakeCollectPolicy()
    collector = StepCollector(cfg(), policy, env, random_collect_size=4)
    ctx = OnlineRLContext()
    run_generator(collector, ctx)
    assert len(policy.kwargs) == 1  # two random vector steps (4 env steps), then the policy


def test_collector_drops_restarted_rows_in_data_pusher():
    env = FakeEnvManager(n_envs=2, crash_at={(1, 2)})
    collector = StepCollector(cfg(), FakeCollectPolicy(), env)
    ctx = OnlineRLContext()
    run_generator(collector, ctx)
    # 3 vector steps gave 5 real transitions (one row was a restart), so a 4th step was taken
    assert len(ctx.trajectories) == 4 and ctx.env_step == 7
    buffer_ = ReplayBuffer(100)
    data_pusher(cfg(), buffer_)(ctx)
    assert len(buffer_) == 7


def test_concat_steps_keeps_row_alignment():
    steps = [{"obs": np.array([[0.0], [1.0]]), "reward": np.array([1.0, 2.0]),
              "valid": np.array([True, False])},
             {"obs": np.array([[2.0], [3.0]]), "reward": np.array([3.0, 4.0]),
              "valid": np.array([True, True])}]
    batch = concat_steps(steps)
    np.testing.assert_array_equal(batch["obs"][:, 0], [0, 2, 3])
    np.testing.assert_array_equal(batch["reward"], [1, 3, 4])
    assert "valid" not in batch


def test_inferencer_and_rolloutor_compose_like_a_collector():
    env, policy = FakeEnvManager(n_envs=2, length=3), FakeCollectPolicy()
    infer, roll = inferencer(0, policy, env), rolloutor(policy, env)
    ctx = OnlineRLContext()
    for _ in range(3):
        infer(ctx)
        roll(ctx)
    assert len(ctx.trajectories) == 3 and ctx.env_step == 6 and ctx.env_episode == 2
    np.testing.assert_array_equal(ctx.obs[:, 1], [2, 2])


def test_episode_collector_returns_whole_episodes():
    env = FakeEnvManager(n_envs=2, length=3)
    ctx = OnlineRLContext()
    EpisodeCollector(cfg(), FakeCollectPolicy(), env)(ctx)
    assert len(ctx.episodes) >= 3
    for episode in ctx.episodes:
        assert len(episode) == 3
        assert [int(step["obs"][1]) for step in episode] == [0, 1, 2]
        assert episode[-1]["truncated"]


def test_eps_schedules():
    linear = epsilon_schedule("linear", 1.0, 0.1, 100)
    assert linear(0) == 1.0 and math.isclose(linear(50), 0.55) and linear(1000) == pytest.approx(0.1)
    exp = epsilon_schedule("exp", 1.0, 0.0, 100)
    assert exp(100) == pytest.approx(math.exp(-1))
    with pytest.raises(ValueError, match="unknown"):
        epsilon_schedule("cosine", 1, 0, 10)
    ctx = OnlineRLContext()
    ctx.env_step = 50
    eps_greedy_handler(cfg())(ctx)
    assert ctx.collect_kwargs["eps"] == pytest.approx(0.55)


def _filled_buffer(n=20, controller=None):
    buffer_ = ReplayBuffer(100, seed=0, controller=controller)
    buffer_.push({"obs": np.arange(n, dtype=np.float32)[:, None], "action": np.zeros(n, np.int64),
                  "reward": np.ones(n, np.float32), "next_obs": np.zeros((n, 1), np.float32),
                  "terminated": np.zeros(n, bool), "truncated": np.zeros(n, bool)})
    return buffer_


def test_offpolicy_learner_updates_and_counts():
    learn = FakeLearnPolicy()
    ctx = OnlineRLContext()
    OffPolicyLearner(cfg(), learn, _filled_buffer())(ctx)
    assert ctx.train_iter == 3 and len(learn.batches) == 3
    assert ctx.train_output["loss"] == 0.5
    assert all(len(b["reward"]) == 4 for b in learn.batches)


def test_offpolicy_learner_obeys_the_sample_ratio_controller():
    controller = SampleRatioController(min_samples=10, max_updates_per_step=0.1)
    buffer_ = _filled_buffer(20, controller)  # 20 inserted → 2 updates allowed
    ctx = OnlineRLContext()
    learner = OffPolicyLearner(cfg(), FakeLearnPolicy(), buffer_)
    learner(ctx)
    assert ctx.train_iter == 2
    learner(ctx)
    assert ctx.train_iter == 2  # nothing new inserted: no more updates


def test_learner_waits_for_a_full_batch():
    ctx = OnlineRLContext()
    OffPolicyLearner(cfg(), FakeLearnPolicy(), _filled_buffer(3))(ctx)
    assert ctx.train_iter == 0 and ctx.train_output is None


def test_nan_loss_names_the_middleware_and_iteration():
    with pytest.raises(NonFiniteLossError, match=r"OffPolicyLearner: 'loss' is nan at train_iter 0"):
        OffPolicyLearner(cfg(), FakeLearnPolicy(loss=float("nan")), _filled_buffer())(OnlineRLContext())


def test_fetcher_and_trainer():
    buffer_ = _filled_buffer()
    ctx = OnlineRLContext()
    fetch = offpolicy_data_fetcher(cfg(), buffer_)(ctx)
    next(fetch)
    assert len(ctx.train_data["reward"]) == 4
    trainer(cfg(), FakeLearnPolicy())(ctx)
    assert ctx.train_iter == 1 and ctx.train_output["loss"] == 0.5
    next(fetch, None)


class _GreedyEval:
    def forward(self, obs):
        return {"action": np.zeros(len(obs), dtype=np.int64)}


def test_interaction_evaluator_runs_on_schedule_and_finishes_at_stop_value():
    config = cfg()
    config.env.stop_value = 5
    t = Task()
    evaluations = []
    with t.start(ctx=OnlineRLContext()):
        t.on("eval_end", lambda c: evaluations.append(c.eval_value))
        t.use(interaction_evaluator(config, _GreedyEval(), FakeEnvManager(n_envs=3, length=5)))
        t.run(max_step=3)
        assert t.ctx.eval_value == 5.0
        assert t.ctx.eval_output["returns"] == [5.0] * 4
    assert evaluations == [5.0]  # finished after the first evaluation


def test_evaluator_skips_until_eval_freq_train_iters():
    evaluator = interaction_evaluator(cfg(), _GreedyEval(), FakeEnvManager(n_envs=2))
    t = Task()
    with t.start(ctx=OnlineRLContext()):
        def train(ctx):
            ctx.train_iter += 4
        t.use(evaluator)
        t.use(train)
        t.run(max_step=6)
        # evaluated at train_iter 0, 12 and at the end (finish)
        assert t.ctx.last_eval_iter == 20


def test_best_checkpoint_holds_the_evaluated_weights(tmp_path):
    import torch

    from rlpipe.middleware import CkptSaver, load_checkpoint

    class Policy:
        def __init__(self):
            self.net = torch.nn.Linear(1, 1)

        def state_dict(self):
            return {"net": self.net.state_dict()}

    policy = Policy()
    evaluated = []

    class Eval:
        def forward(self, obs):
            evaluated.append(policy.net.weight.item())
            return {"action": np.zeros(len(obs), dtype=np.int64)}

    def learn(ctx):  # changes the weights after the evaluation of the iteration
        with torch.no_grad():
            policy.net.weight += 1.0
        ctx.train_iter += 10

    config = cfg()
    config.run_dir = str(tmp_path)
    t = Task()
    with t.start(ctx=OnlineRLContext()):
        t.use(interaction_evaluator(config, Eval(), FakeEnvManager(n_envs=1, length=1)))
        t.use(learn)
        t.use(CkptSaver(config, policy))
        t.run(max_step=3)
    best = load_checkpoint(str(tmp_path), which="best")
    # every evaluation had the same return, so best.pt is the first evaluation's weights
    assert best["policy"]["net"]["weight"].item() == pytest.approx(evaluated[0])
