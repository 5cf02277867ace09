"""`progress_bar`: a tqdm bar over env steps with iterations/s, train_iter and the last eval return;
`BarLogHandler`: log lines written above a live bar instead of onto it.

A Ray run's learner is an actor without a terminal, so the driver (the `rlpipe train` process)
draws the bar instead: on the learner, `ProgressReporter` (a log handler) holds its log lines
and `report_progress` publishes them with the counters, at most every `interval_s`, as the hub's
status blob (`rlpipe.engine.parallel.STATUS`); on the driver, `DriverProgress` is
`launch(on_poll=...)`: it draws the same bar and prints the lines through it, once.
"""
from __future__ import annotations

import collections
import logging
import math
import sys
import time
from typing import Any, Callable, Deque, Dict, IO, List, Mapping, Optional, Tuple

from rlpipe.engine import Role, contract, current_task

from ._cfg import setting

_log = logging.getLogger(__name__)


@contract(reads=("train_iter", "last_eval_value"), optional_reads=("env_step",), writes=(),
          role=Role.LEARNER)
class ProgressBar:
    """The middleware made by `progress_bar`."""

    def __init__(
        self,
        cfg: Any = None,
        total_env_steps: Optional[int] = None,
        desc: Optional[str] = None,
        file: Optional[IO[str]] = None,
        disable: Optional[bool] = None,
        mininterval: float = 0.5,
    ) -> None:
        if total_env_steps is None:
            total_env_steps = setting(cfg, "max_env_step", None)
        if desc is None:
            desc = setting(cfg, "exp_name", None)
        self._bar = _make_bar(total_env_steps, desc, file, disable, mininterval)
        self._last_env_step: Optional[int] = None
        self._iterations = 0  # iterations completed since the first call
        self._start: Optional[float] = None
        self._closed = False

    @property
    def disabled(self) -> bool:
        """Whether the bar draws nothing (e.g. stdout is not a terminal and `disable` was None)."""
        return bool(self._bar.disable)

    def __call__(self, ctx: Any) -> None:
        if self._closed:
            return
        now = time.monotonic()
        if self._start is None:
            self._start = now
        else:
            self._iterations += 1
        env_step = int(getattr(ctx, "env_step", ctx.train_iter))
        self._last_env_step = _draw(self._bar, self._last_env_step, env_step, int(ctx.train_iter),
                                    ctx.last_eval_value, self._iterations, now - self._start)
        if current_task().finish:
            self.close()

    def close(self) -> None:
        """Draw the final state and release the bar (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._bar.refresh()
        self._bar.close()


def _make_bar(total_env_steps: Optional[int], desc: Optional[str], file: Optional[IO[str]],
              disable: Optional[bool], mininterval: float = 0.5) -> Any:
    from tqdm import tqdm  # imported only when a bar is made

    return tqdm(total=total_env_steps, desc=desc, unit="step",
                unit_scale=total_env_steps is None or total_env_steps >= 100_000,  # 1.2M, not 1200000
                dynamic_ncols=True, file=file, disable=disable, mininterval=mininterval)


def _draw(bar: Any, last_env_step: Optional[int], env_step: int, train_iter: int,
          last_eval: Optional[float], iterations: int, elapsed: float) -> int:
    """Set the bar's postfix (it/s, train_iter, eval) and count; returns `env_step`."""
    postfix = {"it/s": f"{iterations / elapsed:.2f}" if elapsed > 0 else "?",
               "train_iter": train_iter}
    if last_eval is not None and math.isfinite(last_eval):
        postfix["eval"] = f"{last_eval:.2f}"
    bar.set_postfix(postfix, refresh=False)
    if last_env_step is None:  # a resumed run starts where its counters are
        bar.n = bar.last_print_n = env_step
    elif env_step > bar.n:
        bar.update(env_step - bar.n)
    elif env_step < bar.n:  # a stand-in count that ran ahead (the driver's collectors' count)
        bar.n = env_step
    return env_step


class BarLogHandler(logging.StreamHandler):
    """A console log handler that writes each line through `tqdm.write`: a live bar on the same
    stream is cleared, the line printed above it, and the bar drawn again (a plain
    `StreamHandler` writes onto the bar's line). Without a bar it prints as a `StreamHandler`.
    `stream` None: the `sys.stderr` of the moment (tqdm's default file)."""

    def __init__(self, stream: Optional[IO[str]] = None) -> None:
        super().__init__(stream)
        self._fixed = stream

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from tqdm import tqdm

            stream = self._fixed if self._fixed is not None else sys.stderr
            tqdm.write(self.format(record), file=stream)
            stream.flush()
        except RecursionError:
            raise
        except Exception:  # noqa: BLE001 - logging's own policy: report it on stderr, go on
            self.handleError(record)


def progress_bar(
    cfg: Any = None,
    total_env_steps: Optional[int] = None,
    desc: Optional[str] = None,
    file: Optional[IO[str]] = None,
    disable: Optional[bool] = None,
) -> ProgressBar:
    """A progress bar over `ctx.env_step` (total: `total_env_steps`, else `cfg.max_env_step`, else open).

    The postfix shows iterations/s, `train_iter` and the last evaluation return. `file` defaults
    to stderr; `disable=None` draws only on a terminal, `False` always, `True` never. The bar
    closes when `current_task().finish` is set and at `close()`.
    """
    return ProgressBar(cfg, total_env_steps=total_env_steps, desc=desc, file=file, disable=disable)


def epoch_timer(print_per: int = 1, smooth_window: int = 10) -> Callable:
    """DI-engine's iteration timer: every `print_per` iterations, log how long the iteration
    took (every middleware after this one, their post-`yield` parts included) and the mean of
    the last `smooth_window` iterations. Put it first to time the whole iteration;
    `task.profile()` says where the time went."""
    for name, value in (("print_per", print_per), ("smooth_window", smooth_window)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"epoch_timer({name}={value!r}): must be an int >= 1")
    recent: Deque[float] = collections.deque(maxlen=smooth_window)

    @contract(reads_after=("total_step",))
    def _epoch_timer(ctx: Any) -> Any:
        start = time.perf_counter()
        yield
        cost = time.perf_counter() - start
        recent.append(cost)
        if ctx.total_step % print_per == 0:
            _log.info("epoch_timer: iteration %d took %.1f ms (mean of the last %d: %.1f ms)",
                      ctx.total_step, cost * 1e3, len(recent), 1e3 * sum(recent) / len(recent))

    return _epoch_timer


Record = Tuple[int, int, str, str, str]
"""A forwarded log line: (sequence number, levelno, levelname, logger name, message)."""
_TRACEBACKS = logging.Formatter()


class ProgressReporter(logging.Handler):
    """On the learner of a Ray run (an actor without a terminal): a log handler that holds the
    lines logged to it and `report()`s them, with the run's progress, as the hub's status blob
    (`rlpipe.engine.parallel.STATUS`, in the blob's info: no object-store round trip) for the
    driver's `DriverProgress`. A report goes out at most every `interval_s` seconds (always with
    `force`): one hub call per report, none in most iterations. A line stays in the reports for
    `keep_s` seconds after it was first sent (at most `max_records` lines are held), so a driver
    that looks every 0.5 s sees each one; the driver prints each once, by sequence number."""

    def __init__(self, link: Any, interval_s: float = 0.5, keep_s: float = 10.0,
                 max_records: int = 256, clock: Any = time.monotonic) -> None:
        super().__init__(logging.INFO)
        if interval_s < 0 or keep_s <= interval_s or max_records < 1:
            raise ValueError(f"ProgressReporter(interval_s={interval_s}, keep_s={keep_s}, "
                             f"max_records={max_records}): need 0 <= interval_s < keep_s and "
                             f"max_records >= 1, or the driver may miss lines")
        self._link = link
        self.interval_s, self.keep_s = float(interval_s), float(keep_s)
        self._clock = clock
        self._records: Deque[Record] = collections.deque(maxlen=int(max_records))
        self._sent: Deque[Tuple[float, int]] = collections.deque()  # (time, last seq sent then)
        self._seq = 0
        self._status: Dict[str, Any] = {}
        self._last_report: Optional[float] = None

    def emit(self, record: logging.LogRecord) -> None:
        """Hold the record's line (called by `handle`, under the handler's lock)."""
        try:
            message = record.getMessage()
            if record.exc_info:
                message += "\n" + _TRACEBACKS.formatException(record.exc_info)
        except RecursionError:
            raise
        except Exception:  # noqa: BLE001 - logging's own policy: report it on stderr, go on
            self.handleError(record)
            return
        self._seq += 1
        self._records.append((self._seq, record.levelno, record.levelname, record.name, message))

    def report(self, status: Optional[Mapping[str, Any]] = None, force: bool = False) -> bool:
        """Merge `status` into the progress, and publish it with the held lines when
        `interval_s` has passed since the last report (or `force`); True when it published."""
        if status:
            self._status.update(status)
        now = self._clock()
        if not force and self._last_report is not None and now - self._last_report < self.interval_s:
            return False
        from rlpipe.engine import parallel

        self.acquire()
        try:
            expired = 0
            while self._sent and now - self._sent[0][0] > self.keep_s:
                expired = self._sent.popleft()[1]
            while self._records and self._records[0][0] <= expired:
                self._records.popleft()
            records: List[Record] = list(self._records)
            self._sent.append((now, self._seq))
        finally:
            self.release()
        self._last_report = now
        self._link.publish(parallel.STATUS, None, {**self._status, "records": records})
        return True

    @staticmethod
    def attached(logger: logging.Logger) -> Optional["ProgressReporter"]:
        """The reporter among `logger`'s handlers (`role_main` adds it on a Ray learner), or None."""
        return next((h for h in logger.handlers if isinstance(h, ProgressReporter)), None)


@contract(reads=("train_iter", "last_eval_value"), optional_reads=("env_step",), writes=(),
          role=Role.LEARNER)
class ReportProgress:
    """The middleware made by `report_progress`."""

    def __init__(self, reporter: ProgressReporter) -> None:
        self.reporter = reporter
        self._iterations = 0
        self._start: Optional[float] = None

    def __call__(self, ctx: Any) -> None:
        now = time.monotonic()
        if self._start is None:
            self._start = now
        else:
            self._iterations += 1
        last_eval = ctx.last_eval_value
        self.reporter.report(
            {"env_step": int(getattr(ctx, "env_step", ctx.train_iter)),
             "train_iter": int(ctx.train_iter),
             "eval": float(last_eval) if last_eval is not None and math.isfinite(last_eval) else None,
             "iterations": self._iterations, "elapsed": now - self._start},
            force=bool(current_task().finish))


def report_progress(reporter: ProgressReporter) -> ReportProgress:
    """Learner of a Ray run, where `progress_bar` would be: report env steps, train_iter, the
    last eval return and iterations/s (with the held log lines) to the driver through
    `reporter`, at most every `reporter.interval_s` seconds, and at the run's finish."""
    return ReportProgress(reporter)


class DriverProgress:
    """On the driver of a Ray run, `rlpipe.engine.parallel.launch(on_poll=...)`: from the hub's
    status blob published by the learner's `report_progress`, draw the bar a single process
    draws (env steps of `total_env_steps`, it/s, train_iter, eval; `show_bar` False: none) and
    print the learner's log lines once each, through this process's console handlers of their
    logger (a `BarLogHandler` writes them above the bar; file handlers are skipped: the learner
    writes log.txt itself). `file`/`disable`: as for `progress_bar`."""

    def __init__(self, total_env_steps: Optional[int] = None, desc: Optional[str] = None,
                 show_bar: bool = True, file: Optional[IO[str]] = None,
                 disable: Optional[bool] = None) -> None:
        self._bar: Any = None  # made at the first look, after Ray's start-up lines
        self._options = (total_env_steps, desc, file, disable) if show_bar else None
        self._seen = 0  # sequence number of the last learner line printed
        self._last_env_step: Optional[int] = None
        self._reported = False  # the learner has reported its env steps at least once
        self._closed = False

    @property
    def disabled(self) -> bool:
        """Whether no bar is drawn (`show_bar` False, or not a terminal with `disable` None)."""
        if self._options is None:
            return True
        if self._bar is not None:
            return bool(self._bar.disable)
        _, _, file, disable = self._options
        if disable is not None:
            return bool(disable)
        stream = file if file is not None else sys.stderr  # tqdm's rule for disable=None
        isatty = getattr(stream, "isatty", None)
        return not (callable(isatty) and isatty())

    def __call__(self, state: Mapping[str, Any]) -> None:
        """Take one look at the hub: `state["status"]` is the learner's newest report (its blob
        info), `state["counters"]` the hub's counters (env steps before the first report)."""
        status = state.get("status") or {}
        self._print(status.get("records") or ())
        if self._options is None or self._closed:
            return
        if self._bar is None:
            self._bar = _make_bar(*self._options)
        # the hub's counters hold the env steps the collectors sent, which run ahead of those
        # the learner has taken in: they stand in only until the learner's first report
        self._reported = self._reported or "env_step" in status
        env_step = (status.get("env_step") if self._reported
                    else (state.get("counters") or {}).get("env_step"))
        if env_step is None:
            return
        self._last_env_step = _draw(self._bar, self._last_env_step, int(env_step),
                                    int(status.get("train_iter", 0)), status.get("eval"),
                                    int(status.get("iterations", 0)),
                                    float(status.get("elapsed", 0.0)))
        self._bar.refresh()

    def _print(self, records: Any) -> None:
        for seq, levelno, levelname, name, message in records:
            if seq <= self._seen:
                continue
            if seq > self._seen + 1:
                _to_console(logging.makeLogRecord(dict(  # to the console of the next line
                    name=name, levelno=logging.WARNING, levelname="WARNING",
                    msg=f"{seq - self._seen - 1} log lines of the learner are not shown here "
                        f"(they came faster than the driver looked); the run's log.txt has them")))
            self._seen = seq
            _to_console(logging.makeLogRecord(dict(name=name, levelno=levelno,
                                                   levelname=levelname, msg=message)))

    def close(self) -> None:
        """Draw the final state and release the bar (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.refresh()
            self._bar.close()


def _to_console(record: logging.LogRecord) -> None:
    """Hand `record` to the console (not file) handlers its logger reaches in this process."""
    logger: Optional[logging.Logger] = logging.getLogger(record.name)
    if not logger.isEnabledFor(record.levelno):
        return
    while logger is not None:
        for handler in logger.handlers:
            if isinstance(handler, logging.StreamHandler) and \
                    not isinstance(handler, logging.FileHandler) and record.levelno >= handler.level:
                handler.handle(record)
        logger = logger.parent if logger.propagate else None


__all__ = ["BarLogHandler", "DriverProgress", "ProgressBar", "ProgressReporter", "ReportProgress",
           "epoch_timer", "progress_bar", "report_progress"]
