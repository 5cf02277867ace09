"""progress_bar: draws env steps, it/s, train_iter and last eval to a given file; safe without a TTY."""
import io

import pytest
from easydict import EasyDict

from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import _current, contract_of
from rlpipe.middleware.progress import progress_bar


class FakeTask:
    finish = False


@pytest.fixture
def running():
    task = FakeTask()
    _current.set_running(task)
    yield task
    _current.set_running(None)


def _drive(bar, n_iter, running):
    ctx = OnlineRLContext()
    for i in range(n_iter):
        ctx.env_step += 50
        ctx.train_iter += 5
        if i == 1:
            ctx.last_eval_value = 123.25
        running.finish = i == n_iter - 1
        bar(ctx)
        ctx = ctx.renew()


def test_writes_to_a_given_file(running):
    out = io.StringIO()
    bar = progress_bar(total_env_steps=200, desc="cartpole", file=out, disable=False)
    _drive(bar, 4, running)
    text = out.getvalue()
    assert "cartpole" in text and "200/200" in text
    assert "train_iter=20" in text and "eval=123.25" in text and "it/s=" in text
    bar.close()  # idempotent after the close at finish


def test_total_from_cfg_and_open_ended(running):
    out = io.StringIO()
    bar = progress_bar(EasyDict(max_env_step=1000), file=out, disable=False)
    _drive(bar, 2, running)
    assert "100/1000" in out.getvalue()
    out = io.StringIO()
    bar = progress_bar(file=out, disable=False)
    _drive(bar, 2, running)
    assert "100" in out.getvalue()


def test_not_a_tty_disables_without_crashing(running):
    out = io.StringIO()  # isatty() is False
    bar = progress_bar(total_env_steps=100, file=out)
    assert bar.disabled
    _drive(bar, 3, running)
    bar.close()
    assert out.getvalue() == ""


def test_close_without_any_iteration(running):
    bar = progress_bar(file=io.StringIO(), disable=False)
    bar.close()
    bar.close()


def test_contract_reads_only():
    c = contract_of(progress_bar(file=io.StringIO()))
    assert c.writes == frozenset() and c.reads == {"train_iter", "last_eval_value"}
    assert c.optional_reads == {"env_step"}  # an OfflineRLContext counts train_iter only


def test_through_a_task():
    from rlpipe.engine import Task, contract

    @contract(reads=("env_step",), writes=("env_step",))
    def collect(ctx):
        ctx.env_step += 10

    out = io.StringIO()
    bar = progress_bar(total_env_steps=30, file=out, disable=False)
    with Task().start(ctx=OnlineRLContext()) as task:
        task.use(collect)
        task.use(bar)
        task.run(max_step=3)
    assert "30/30" in out.getvalue() and bar._closed


def test_log_lines_go_above_a_live_bar_not_onto_it():
    import logging

    from rlpipe.middleware.progress import BarLogHandler

    out = io.StringIO()
    bar = progress_bar(total_env_steps=100, desc="cartpole", file=out, disable=False)
    bar._bar.update(10)
    bar._bar.refresh()
    handler = BarLogHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    log = logging.getLogger("rlpipe.test.bar")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("a line of its own")
    finally:
        log.removeHandler(handler)
        log.propagate = True
    bar.close()
    lines = out.getvalue().replace("\r", "\n").splitlines()
    assert "WARNING a line of its own" in lines  # a whole line, not appended to the bar's
    after = out.getvalue().split("a line of its own", 1)[1]
    assert "cartpole" in after  # the bar is drawn again below it


def test_bar_log_handler_without_a_bar_prints_like_a_stream_handler(capsys):
    import logging

    from rlpipe.middleware.progress import BarLogHandler

    handler = BarLogHandler()  # the stderr of the moment
    record = logging.LogRecord("rlpipe", logging.INFO, __file__, 1, "plain %s", ("line",), None)
    handler.emit(record)
    assert capsys.readouterr().err == "plain line\n"
