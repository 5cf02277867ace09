"""final_evaluation(): the weights a run ends with are evaluated once, by the evaluator of this
process, in the finishing iteration (or at the finish event when the finish came later)."""
from easydict import EasyDict

from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import Task
from rlpipe.middleware import interaction_evaluator
from rlpipe.middleware.evaluator import final_evaluation

from .fakes import FakeEnvManager
from .test_collect_learn import _GreedyEval


def cfg(eval_freq=1000):
    return EasyDict(policy=dict(eval=dict(evaluator=dict(eval_freq=eval_freq, n_episode=2))),
                    env=dict(stop_value=None))


def train(ctx):
    ctx.train_iter += 4


def _run(chain, max_step):
    t = Task()
    evaluated = []
    with t.start(ctx=OnlineRLContext()):
        t.on("eval_end", lambda c: evaluated.append(c.train_iter))
        for mw in chain:
            t.use(mw)
        t.run(max_step=max_step)
        ctx = t.ctx
    return ctx, evaluated


def test_the_final_weights_are_evaluated_in_the_finishing_iteration():
    seen = []
    ctx, evaluated = _run([interaction_evaluator(cfg(), _GreedyEval(), FakeEnvManager()), train,
                           final_evaluation(),
                           lambda c: seen.append((c.train_iter, c.eval_value))], max_step=3)
    # the first iteration's evaluation (train_iter 0), and at the finish train_iter 8 (the
    # evaluator ran at its start, finish already set) and 12, the weights the run ends with
    assert evaluated == [0, 8, 12]
    assert ctx.last_eval_iter == ctx.train_iter == 12
    assert seen[-1] == (12, 5.0)  # later middleware (logger, checkpoints) see it


def test_no_second_evaluation_of_the_same_weights():
    def no_training(ctx):
        pass

    _, evaluated = _run([interaction_evaluator(cfg(), _GreedyEval(), FakeEnvManager()),
                         no_training, final_evaluation()], max_step=2)
    assert evaluated == [0]


def test_a_finish_set_after_it_is_caught_at_the_finish_event():
    t_finish = []

    def late_finish(ctx):  # e.g. a signal arriving after final_evaluation ran
        if ctx.train_iter >= 8:
            from rlpipe.engine import current_task
            current_task().finish = True
            t_finish.append(ctx.train_iter)

    ctx, evaluated = _run([interaction_evaluator(cfg(), _GreedyEval(), FakeEnvManager()), train,
                           final_evaluation(), late_finish], max_step=None)
    assert t_finish == [8] and evaluated == [0, 8]
    assert ctx.last_eval_iter == 8 and ctx.eval_value == 5.0


def _stop_at(signum, at_iter):
    def stop(ctx):  # what a signal handler does, from inside the chain for a fixed iteration
        if ctx.train_iter == at_iter:
            from rlpipe.engine import current_task
            current_task().end_run_for_signal(signum)
    return stop


def test_a_sigterm_ends_the_run_without_evaluating_and_a_ctrl_c_with():
    # a scheduler's SIGTERM is followed by SIGKILL after a grace period: the checkpoint must
    # not wait for an evaluation; a person's Ctrl-C gets the final weights evaluated
    import signal

    for signum, expected in ((signal.SIGTERM, [0]), (signal.SIGINT, [0, 8])):
        ctx, evaluated = _run([interaction_evaluator(cfg(), _GreedyEval(), FakeEnvManager()),
                               _stop_at(signum, 4), train, final_evaluation()], max_step=None)
        assert ctx.train_iter == 8 and evaluated == expected, signum
    t = Task()  # taking the finish back takes the skipped evaluation back too
    with t.start(ctx=OnlineRLContext()):
        t.end_run("stopped by SIGTERM", evaluate=False)
        assert not t.final_eval_wanted
        t.finish = False
        assert t.final_eval_wanted


def test_without_an_evaluator_nothing_is_asked():
    ctx, evaluated = _run([train, final_evaluation()], max_step=2)
    assert evaluated == [] and ctx.last_eval_iter == -1



def test_the_evaluation_that_reached_stop_value_keeps_its_row_and_line(tmp_path, caplog):
    """The evaluator reaches stop_value at the start of an iteration, the iteration trains on,
    and the final weights are evaluated too: both evaluations are in metrics.jsonl and the log,
    each with its own train_iter (the later one no longer hides the one that stopped the run)."""
    import logging

    from rlpipe.middleware import online_logger, read_metrics

    c = cfg(eval_freq=1000)
    c.env.stop_value = 5.0  # _GreedyEval's return: the first evaluation reaches it
    with caplog.at_level(logging.INFO, logger="rlpipe.middleware.evaluator"):
        ctx, evaluated = _run([interaction_evaluator(c, _GreedyEval(), FakeEnvManager()), train,
                               final_evaluation(), online_logger(run_dir=tmp_path,
                                                                 tensorboard=False)],
                              max_step=5)
    assert evaluated == [0, 4] and ctx.train_iter == 4
    rows = [(r["train_iter"], r["eval/return_mean"]) for r in read_metrics(tmp_path)
            if "eval/return_mean" in r]
    assert rows == [(0, 5.0), (4, 5.0)]
    lines = [m for m in caplog.messages if "mean return" in m]
    assert sum("reached stop_value" in m for m in caplog.messages) == 1
    # in time order: the evaluation that stopped the run, then the final one
    assert [m.split(",")[0] for m in lines] == ["eval at train_iter 0",
                                                "final eval at train_iter 4"]
