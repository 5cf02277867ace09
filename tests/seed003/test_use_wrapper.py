"""`task.use_wrapper(w)` wraps the middleware already added, as DI-engine does (the guide's
off-policy lines, then a wrapper)."""
from rlpipe import task
from rlpipe.contexts import OnlineRLContext
from rlpipe.middleware import (CkptSaver, OffPolicyLearner, StepCollector, data_pusher,
                               eps_greedy_handler, interaction_evaluator)


def test_a_wrapper_added_after_the_guides_middleware_wraps_all_of_them(dqn):
    cfg, policy, buffer_ = dqn.cfg, dqn.policy, dqn.buffer_
    collector_env, evaluator_env = dqn.collector_env, dqn.evaluator_env
    calls = []

    def count_calls(fn):
        def wrapped(ctx):
            calls.append(type(fn).__name__ if not hasattr(fn, "__name__") else fn.__name__)
            return fn(ctx)
        return wrapped

    with task.start(async_mode=False, ctx=OnlineRLContext()):
        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(eps_greedy_handler(cfg))
        task.use(StepCollector(cfg, policy.collect_mode, collector_env))
        task.use(data_pusher(cfg, buffer_))
        task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
        task.use(CkptSaver(cfg, policy, train_freq=100))
        task.use_wrapper(count_calls)
        task.run(max_step=100000)
    assert calls == ["_evaluator", "_eps_greedy", "StepCollector", "_data_pusher",
                     "OffPolicyLearner", "CkptSaver"]
