"""Contracts declare the events a middleware emits and whether it finishes the run (#22)."""
import warnings

import pytest

from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import Task, contract, contract_of


def test_contract_carries_emits_and_finishes():
    @contract(reads=("env_step",), emits=("my_event",), finishes=True)
    def mw(ctx):
        pass

    c = contract_of(mw)
    assert c.emits == frozenset({"my_event"}) and c.finishes is True
    assert contract_of(contract()(lambda ctx: None)).emits == frozenset()
    assert contract_of(contract()(lambda ctx: None)).finishes is False


@pytest.mark.parametrize("kwargs, word", [(dict(emits="eval_end"), "emits"),
                                          (dict(finishes="yes"), "finishes")])
def test_contract_refuses_a_bare_string_or_a_non_bool(kwargs, word):
    with pytest.raises(TypeError, match=word):
        contract(**kwargs)


def test_serial_and_parallel_composites_keep_events():
    @contract(writes=("obs",), emits=("a",))
    def first(ctx):
        pass

    @contract(writes=("action",), finishes=True)
    def second(ctx):
        pass

    t = Task()
    for composite in (t.serial(first, second), t.parallel(first, second)):
        c = contract_of(composite)
        assert c.emits == frozenset({"a"}) and c.finishes


def test_library_middleware_declare_what_they_emit_and_finish():
    from types import SimpleNamespace

    from easydict import EasyDict

    from rlpipe.middleware import interaction_evaluator, termination_checker

    cfg = EasyDict(env=dict(stop_value=1.0),
                   policy=dict(eval=dict(evaluator=dict(eval_freq=1, n_episode=1))))
    evaluator = interaction_evaluator(cfg, SimpleNamespace(), SimpleNamespace())
    assert contract_of(evaluator).emits == {"eval_end"} and contract_of(evaluator).finishes
    cfg.env.stop_value = None  # without a stop value the evaluator never finishes the run
    assert not contract_of(interaction_evaluator(cfg, SimpleNamespace(), SimpleNamespace())).finishes
    assert contract_of(termination_checker(max_train_iter=1)).finishes


def _run_with_listener(event, emitter_declared=True):
    @contract(writes=("env_step",), emits=("eval_end",) if emitter_declared else ())
    def emitter(ctx):
        ctx.env_step += 1

    heard = []
    t = Task()
    with t.start(ctx=OnlineRLContext()):
        t.on(event, heard.append)
        t.use(emitter)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t.run(max_step=1)
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def test_a_listener_for_a_misspelt_declared_event_warns_naming_the_fix():
    messages = _run_with_listener("eval_ended")
    assert len(messages) == 1
    assert "'eval_ended'" in messages[0] and "did you mean 'eval_end'" in messages[0]
    assert "emitter" in messages[0]


@pytest.mark.parametrize("event", ["eval_end", "finish", "my_own_event", "episode_start"])
def test_declared_engine_and_user_events_stay_silent(event):
    assert _run_with_listener(event) == []


def test_an_undeclared_middleware_may_emit_anything():
    t = Task()
    with t.start(ctx=OnlineRLContext()):
        t.on("eval_ended", lambda ctx: None)
        t.use(lambda ctx: None)  # undeclared: it may emit "eval_ended"
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            t.run(max_step=1)


def test_ckpt_saver_and_final_evaluation_declare_the_events_they_emit(tmp_path):
    from rlpipe.middleware import CkptSaver
    from rlpipe.middleware.evaluator import FINAL_EVAL, final_evaluation
    from rlpipe.runs import CHECKPOINT_EVENT

    class Policy:
        def state_dict(self):
            return {}

    assert contract_of(CkptSaver(None, Policy(), run_dir=tmp_path)).emits == {CHECKPOINT_EVENT}
    assert contract_of(final_evaluation()).emits == {FINAL_EVAL}


def _caught(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


@pytest.mark.parametrize("async_mode", [False, True])
def test_an_undeclared_emit_is_reported_once_in_one_line_naming_middleware_and_event(async_mode):
    @contract(writes=("env_step",), emits=("declared",))
    def emitter(ctx):
        ctx.env_step += 1
        t.emit("declared", ctx)
        yield
        t.emit("sneaky", ctx)  # after its yield too: still this middleware's code

    heard = []
    t = Task()
    with t.start(async_mode=async_mode, ctx=OnlineRLContext()):
        t.on("sneaky", heard.append)
        t.use(emitter)
        messages = _caught(lambda: t.run(max_step=3))
    assert len(heard) == 3  # reported, not refused: the event still reaches its listeners
    assert len(messages) == 1 and "\n" not in messages[0]
    assert "emitter'" in messages[0] and "'sneaky'" in messages[0]
    assert "emits=('sneaky',)" in messages[0]


def test_declared_emits_undeclared_middleware_and_handlers_emits_stay_silent():
    @contract(writes=("env_step",), emits=("first",))
    def declared(ctx):
        t.emit("first", ctx)

    def undeclared(ctx):  # no contract: it may emit anything
        t.emit("anything", ctx)

    t = Task()
    with t.start(ctx=OnlineRLContext()):
        # what a handler emits belongs to whoever registered it, not to the emitting middleware
        t.on("first", lambda ctx: t.emit("from_a_handler", ctx))
        t.use(declared)
        t.use(undeclared)
        assert _caught(lambda: t.run(max_step=2)) == []
