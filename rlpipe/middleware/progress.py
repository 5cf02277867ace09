"""`progress_bar`: a tqdm bar over env steps with iterations/s, train_iter and the last eval return;
`BarLogHandler`: log lines written above a live bar instead of onto it."""
from __future__ import annotations

import logging
import math
import sys
import time
from typing import Any, IO, Optional

from rlpipe.engine import Role, contract, current_task

from ._cfg import setting


@contract(reads=("env_step", "train_iter", "last_eval_value"), writes=(), role=Role.LEARNER)
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
        from tqdm import tqdm  # imported only when a bar is made

        if total_env_steps is None:
            total_env_steps = setting(cfg, "max_env_step", None)
        if desc is None:
            desc = setting(cfg, "exp_name", None)
        self._bar = tqdm(
            total=total_env_steps,
            desc=desc,
            unit="step",
            unit_scale=total_env_steps is None or total_env_steps >= 100_000,  # 1.2M, not 1200000
            dynamic_ncols=True,
            file=file,
            disable=disable,
            mininterval=mininterval,
        )
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
        elapsed = now - self._start
        postfix = {
            "it/s": f"{self._iterations / elapsed:.2f}" if elapsed > 0 else "?",
            "train_iter": int(ctx.train_iter),
        }
        last_eval = ctx.last_eval_value
        if last_eval is not None and math.isfinite(last_eval):
            postfix["eval"] = f"{last_eval:.2f}"
        self._bar.set_postfix(postfix, refresh=False)
        env_step = int(getattr(ctx, "env_step", ctx.train_iter))
        if self._last_env_step is None:  # a resumed run starts where its counters are
            self._bar.n = self._bar.last_print_n = env_step
        elif env_step > self._last_env_step:
            self._bar.update(env_step - self._last_env_step)
        self._last_env_step = env_step
        if current_task().finish:
            self.close()

    def close(self) -> None:
        """Draw the final state and release the bar (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._bar.refresh()
        self._bar.close()


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


__all__ = ["BarLogHandler", "ProgressBar", "progress_bar"]
