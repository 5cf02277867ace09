"""Exchange middleware between the processes of a distributed run, over in-process links.

Each side runs in its own Task, one after another (a collector's iterations, then the learner's),
with the hub of `parallel.local_links` between them: no Ray, no threads.
"""
import time

import numpy as np
import pytest
import torch
from easydict import EasyDict

from rlpipe.contexts import OnlineRLContext
from rlpipe.data import ReplayBuffer, SampleRatioController
from rlpipe.engine import Task, contract_of, parallel
from rlpipe.envs import EnvManager
from rlpipe.middleware import (OffPolicyLearner, StepCollector, concat_steps, data_pusher,
                               eps_greedy_handler)
from rlpipe.middleware.exchange import (EVALUATIONS, TRAJECTORIES, WEIGHTS, Exchange,
                                        load_module_weights, module_weights)
from rlpipe.policies import DQNPolicy, SACPolicy

N_SAMPLE = 32


def make_cfg():
    return EasyDict(
        policy=dict(model=dict(hidden=(16, 16)), learn=dict(batch_size=16, update_per_collect=4),
                    collect=dict(n_sample=N_SAMPLE, random_collect_size=0),
                    other=dict(eps=dict(type="linear", start=1.0, end=0.1, decay=1000))),
        parallel=dict(publish_every=None, batches_per_iter=1))


def make_policy(cfg, seed):
    env = EnvManager("CartPole-v1", n_envs=2, seed=seed)
    return DQNPolicy({**cfg.policy, "seed": seed}, env.observation_space, env.action_space), env


@pytest.fixture
def run():
    learner, collectors, evaluator, close = parallel.local_links(collectors=2, evaluator=True,
                                                                 queue_size=8)
    yield learner, collectors, evaluator
    close()


def collector_side(cfg, link, iterations, seed=1, compressor=None):
    policy, env = make_policy(cfg, seed)
    exchange = Exchange(cfg, policy, link, compressor=compressor)
    t = Task()
    with t.start(ctx=OnlineRLContext()):
        t.use(exchange.receive)
        t.use(eps_greedy_handler(cfg))
        t.use(StepCollector(cfg, policy.collect_mode, env))
        t.use(exchange.send)
        t.run(max_step=iterations)
    return policy, t.ctx


def learner_side(cfg, link, iterations, ctx=None, decompressor=None):
    policy, env = make_policy(cfg, 0)
    env.close()
    buffer_ = ReplayBuffer(1000, seed=0, controller=SampleRatioController(16, 4 / N_SAMPLE))
    exchange = Exchange(cfg, policy, link, decompressor=decompressor)
    t = Task()
    with t.start(ctx=ctx or OnlineRLContext()):
        t.use(exchange.receive)
        t.use(data_pusher(cfg, buffer_))
        t.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
        t.use(exchange.send)
        t.run(max_step=iterations)
    return policy, buffer_, t.ctx


def test_collectors_wait_for_weights_and_send_their_data_with_the_version(run):
    learner, (c0, c1), _ = run
    cfg = make_cfg()
    trained, _ = make_policy(cfg, 0)
    learner.add({"env_step": 100})  # what a resumed learner does first
    learner.publish(WEIGHTS, module_weights(trained), {"train_iter": 7})
    policy, ctx = collector_side(cfg, c1, iterations=2)
    for mine, theirs in zip(policy.acting.parameters(), trained.online.parameters()):
        assert torch.equal(mine, theirs)  # acts with the learner's weights, not its own init
    messages = learner.pop(TRAJECTORIES)
    assert [m["version"] for m in messages] == [1, 1] and {m["source"] for m in messages} == {"collector 1"}
    assert [m["env_step"] for m in messages] == [N_SAMPLE, N_SAMPLE]
    assert ctx.env_step == 100 + 2 * N_SAMPLE  # the run's count, not only this collector's
    assert learner.state()["counters"]["env_step"] == 100 + 2 * N_SAMPLE


def test_learner_trains_one_batch_per_iteration_and_publishes_new_versions(run):
    learner, (c0, c1), _ = run
    cfg = make_cfg()
    seed_policy, _ = make_policy(cfg, 0)
    learner.publish(WEIGHTS, module_weights(seed_policy))
    collector_side(cfg, c0, iterations=2)
    collector_side(cfg, c1, iterations=1, seed=2)
    ctx = OnlineRLContext()
    ctx.env_step = 1000  # a resumed run's counters are added to the hub's first
    policy, buffer_, ctx = learner_side(cfg, learner, iterations=3, ctx=ctx)
    assert len(buffer_) == 3 * N_SAMPLE and ctx.env_step == 1000 + 3 * N_SAMPLE
    assert ctx.train_iter > 0 and ctx.env_episode >= 0
    state = learner.state()
    assert state["versions"][WEIGHTS] >= 3  # v1 (test) + initial + after training
    update = c0.poll(WEIGHTS, have=1)
    assert update.info["train_iter"] == ctx.train_iter
    fresh, _ = make_policy(cfg, 5)
    load_module_weights(fresh, update.value)
    for a, b in zip(fresh.online.parameters(), policy.online.parameters()):
        assert torch.equal(a, b)


def test_compressor_and_decompressor_wrap_the_trajectories(run):
    learner, (c0, _), _ = run
    cfg = make_cfg()
    seed_policy, _ = make_policy(cfg, 0)
    learner.publish(WEIGHTS, module_weights(seed_policy))

    def compress(steps):
        batch = concat_steps(steps)
        batch["obs"] = batch["obs"].astype(np.float16)
        batch["next_obs"] = batch["next_obs"].astype(np.float16)
        return ("packed", batch)

    def decompress(payload):
        kind, batch = payload
        assert kind == "packed"
        return [{**batch, "obs": batch["obs"].astype(np.float32),
                 "next_obs": batch["next_obs"].astype(np.float32)}]

    collector_side(cfg, c0, iterations=1, compressor=compress)
    queued = learner.pop(TRAJECTORIES)
    assert queued[0]["data"][0] == "packed" and queued[0]["data"][1]["obs"].dtype == np.float16
    c0.push(TRAJECTORIES, queued)  # back, for the learner
    _, buffer_, _ = learner_side(cfg, learner, iterations=1, decompressor=decompress)
    assert len(buffer_) == N_SAMPLE and buffer_.sample(4)["obs"].dtype == np.float32


def test_finish_on_the_hub_ends_collectors_and_the_learner(run):
    learner, (c0, _), _ = run
    cfg = make_cfg()
    learner.finish()
    _, ctx = collector_side(cfg, c0, iterations=None)  # would run forever without the flag
    assert ctx.total_step == 0
    policy, buffer_, lctx = learner_side(cfg, learner, iterations=None)
    assert len(buffer_) == 0 and lctx.total_step == 0


def test_learner_takes_the_evaluator_results_and_finishes_on_its_stop(run):
    learner, (c0, _), evaluator = run
    cfg = make_cfg()
    seed_policy, _ = make_policy(cfg, 0)
    learner.publish(WEIGHTS, module_weights(seed_policy))
    collector_side(cfg, c0, iterations=3)
    evaluator.push(EVALUATIONS, [{"eval_value": 480.0, "eval_output": {"returns": [480.0]},
                                  "train_iter": 4, "stop": True}])
    seen = []
    policy, env = make_policy(cfg, 0)
    buffer_ = ReplayBuffer(1000, seed=0)
    exchange = Exchange(cfg, policy, learner)
    assert {"eval_value", "last_eval_value"} <= contract_of(exchange.receive).writes
    t = Task()
    with t.start():
        t.on("eval_end", lambda ctx: seen.append(ctx.eval_value))
        t.use(exchange.receive)
        t.use(data_pusher(cfg, buffer_))
        t.run()  # the evaluator's stop ends it
    assert seen == [480.0] and t.ctx.last_eval_iter == 4 and t.ctx.total_step == 0


def test_evaluator_side_waits_for_weights_and_reports_new_evaluations(run):
    learner, _, evaluator = run
    cfg = make_cfg()
    trained, _ = make_policy(cfg, 0)
    learner.publish(WEIGHTS, module_weights(trained), {"train_iter": 12, "env_step": 640,
                                                        "env_episode": 3})
    policy, _ = make_policy(cfg, 9)
    exchange = Exchange(cfg, policy, evaluator)

    def fake_evaluator(ctx):
        ctx.eval_value, ctx.eval_output = 9.0, {"returns": [9.0]}
        ctx.last_eval_iter = ctx.train_iter

    t = Task()
    with t.start():
        t.use(exchange.receive)
        t.use(fake_evaluator)
        t.use(exchange.send)
        t.run(max_step=1)
    assert (t.ctx.train_iter, t.ctx.env_step) == (12, 640)
    [message] = learner.pop(EVALUATIONS)
    weights = message.pop("weights")  # its first evaluation is its best: the weights go along
    assert message == {"eval_value": 9.0, "eval_output": {"returns": [9.0]}, "train_iter": 12,
                       "stop": True}
    expected = module_weights(trained)
    assert set(weights) == set(expected) == {"online"}
    for key, value in expected["online"].items():
        assert torch.equal(weights["online"][key], value)


def test_module_weights_ship_the_networks_but_not_the_copies():
    cfg = make_cfg()
    dqn, env = make_policy(cfg, 0)
    assert set(module_weights(dqn)) == {"online"}
    sac = SACPolicy({"model": {"actor_hidden": (8,), "critic_hidden": (8,)}},
                    EnvManager("Pendulum-v1").observation_space,
                    EnvManager("Pendulum-v1").action_space)
    assert set(module_weights(sac)) == {"actor", "critic"}
    with pytest.raises(AttributeError, match="no torch module 'nope'"):
        module_weights(dqn, ["nope"])


def test_exchange_outside_a_distributed_run_is_an_error():
    cfg = make_cfg()
    policy, _ = make_policy(cfg, 0)
    with pytest.raises(RuntimeError, match="launch"):
        Exchange(cfg, policy)


def test_exchange_is_exported():
    import rlpipe.middleware as mw

    assert "Exchange" in mw.__all__ and mw.Exchange is Exchange


def test_the_learner_waits_for_the_evaluator_process_to_evaluate_its_final_weights(run, caplog):
    import threading

    from rlpipe.middleware.evaluator import final_evaluation

    learner, _, evaluator = run
    cfg = make_cfg()
    trained, _ = make_policy(cfg, 0)
    learner_exchange = Exchange(cfg, trained, learner)
    answered = {}

    def evaluator_process():  # one evaluator iteration, as its process runs it
        policy, _ = make_policy(cfg, 9)
        exchange = Exchange(cfg, policy, evaluator)
        ctx = OnlineRLContext()
        exchange.receive(ctx)  # waits for the final weights
        ctx.eval_value, ctx.eval_output = 7.0, {"returns": [7.0]}
        ctx.last_eval_iter = ctx.train_iter
        exchange.send(ctx)
        answered.update(final=exchange.receive.s.final, train_iter=ctx.train_iter)

    thread = threading.Thread(target=evaluator_process)
    thread.start()

    def trained_to_20(ctx):
        ctx.train_iter, ctx.env_step, ctx.last_eval_iter = 20, 640, 0

    t = Task()
    with caplog.at_level("INFO", logger="rlpipe"), t.start(ctx=OnlineRLContext()):
        learner_exchange.receive.attach(t)  # as task.use() does; its call would wait for data
        t.use(trained_to_20)
        t.use(final_evaluation())
        t.run(max_step=1)
        ctx = t.ctx
    thread.join(timeout=30)
    assert answered == {"final": True, "train_iter": 20}
    assert (ctx.last_eval_iter, ctx.eval_value, ctx.last_eval_value) == (20, 7.0, 7.0)
    assert ("final eval at train_iter 20, env_step 640: mean return 7.00 (std 0.00, 1 episodes, "
            "evaluator process)") in caplog.text


def test_a_publication_after_the_final_one_stays_marked_final(run):
    # async mode: the learner's own publish may run after the final one in the last iteration
    learner, _, evaluator = run
    cfg = make_cfg()
    policy, _ = make_policy(cfg, 0)
    exchange = Exchange(cfg, policy, learner)
    ctx = OnlineRLContext()
    ctx.train_iter = 8
    exchange.send.publish(ctx)
    assert evaluator.poll(WEIGHTS).info["final"] is False
    exchange.send.publish(ctx, final=True)
    exchange.send.publish(ctx)
    update = evaluator.poll(WEIGHTS)
    assert update.version == 3 and update.info["final"] is True


def test_the_learner_stops_waiting_when_the_evaluator_process_has_ended(run, caplog):
    from rlpipe.middleware.exchange import EVALUATOR_EXITS
    from rlpipe.middleware.evaluator import final_evaluation

    learner, _, evaluator = run
    cfg = make_cfg()
    trained, _ = make_policy(cfg, 0)
    learner_exchange = Exchange(cfg, trained, learner)
    evaluator.add({EVALUATOR_EXITS: 1})  # e.g. it stopped at its stop_value: no answer comes

    def trained_to_20(ctx):
        ctx.train_iter, ctx.last_eval_iter = 20, 0

    t = Task()
    with caplog.at_level("WARNING", logger="rlpipe"), t.start(ctx=OnlineRLContext()):
        learner_exchange.receive.attach(t)
        t.use(trained_to_20)
        t.use(final_evaluation())
        started = time.monotonic()
        t.run(max_step=1)
        assert t.ctx.last_eval_iter == 0 and time.monotonic() - started < 5
    assert "ended without evaluating the final weights (train_iter 20)" in caplog.text
