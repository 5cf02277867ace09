"""`online_logger`: scalars of each iteration to TensorBoard and to a JSON-lines metrics file.

The step axis is `ctx.env_step` (`ctx.train_iter` on a context without env steps, such as
`OfflineRLContext`, whose rows have no `env_step` key). One JSON object per logged iteration goes to
`<run_dir>/metrics.jsonl`; the same scalars go to TensorBoard under `<run_dir>/tb` (tags equal the
JSON keys), and with `logger.wandb=True` to Weights & Biases (`_wandb.py`). Keys of a row:

- always: `env_step` (where the context counts them), `train_iter`, `total_step`, `time` (Unix time), `wall_time` (seconds since
  this logger was made);
- `train/<name>`: the scalars of `ctx.train_output` (a dict, or the mean over a list of dicts),
  averaged over the iterations since the last shown one (`train_show_freq`);
- `eval/return_mean`: `ctx.eval_value` when an evaluation ran this iteration (finite);
- `collect/episode_return_mean`, `collect/episode_length_mean`, `collect/episodes`: from
  `ctx.episode_info`, the episodes that finished this iteration;
- multi-agent runs (the returns above are team returns, summed over agents):
  `collect/agent_return/<agent>` (mean over the episodes of `ctx.episode_info` of each agent's
  `agent_returns`) and `eval/agent_return/<agent>` (`ctx.eval_output["agent_returns"]`);
- every entry of `ctx.info_for_logging`, under its own name.

Non-finite and non-scalar values are skipped; numpy and torch scalars become floats. Iterations
with nothing to log write no row. Before a checkpoint saver declares a resumable checkpoint it
emits `rlpipe.runs.CHECKPOINT_EVENT`: the logger then flushes and fsyncs the metrics file and
TensorBoard, so the checkpoint covers every row up to it. A resumed run first cuts the files back
to what its checkpoint covered (see rlpipe.pipelines.resume), then appends on the same step axis
(TensorBoard events at or after the resumed step are purged from view).
"""
from __future__ import annotations

import contextlib
import json
import logging
import math
import numbers
import os
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Union

from rlpipe._script import default_run_dir
from rlpipe.engine import Role, contract, current_task
from rlpipe.runs import CHECKPOINT_EVENT, RunDir

from ._acting_agents import mean_agent_returns
from ._cfg import setting
from ._io import PathLike, not_writing, resolve_run_dir
from ._wandb import require_wandb, wandb_sink

log = logging.getLogger(__name__)


def to_scalar(value: Any) -> Optional[float]:
    """`value` as a finite float if it is a real number (Python, numpy or a one-element tensor), else None."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, numbers.Real):
        out = float(value)
    else:
        size = getattr(value, "size", None)
        numel = getattr(value, "numel", None)
        try:
            if callable(numel):  # torch tensor
                if numel() != 1 or value.is_complex():
                    return None
                out = float(value.detach().reshape(()).item())
            elif size == 1 and hasattr(value, "dtype") and value.dtype.kind in "biuf":  # numpy
                out = float(value.reshape(()).item())
            else:
                return None
        except (TypeError, ValueError, AttributeError, RuntimeError):
            return None
    return out if math.isfinite(out) else None


def _mean_scalars(outputs: Iterable[Dict[str, Any]]) -> Dict[str, float]:
    sums: Dict[str, float] = {}
    counts: Dict[str, int] = {}
    for out in outputs:
        for key, value in out.items():
            x = to_scalar(value)
            if x is not None:
                sums[key] = sums.get(key, 0.0) + x
                counts[key] = counts.get(key, 0) + 1
    return {key: sums[key] / counts[key] for key in sums}


def _step(row: Dict[str, Any]) -> float:
    """A row's place on the step axis: its env step, or its train_iter in an offline run."""
    return row.get("env_step", row.get("train_iter", 0))


def read_metrics(path: PathLike, keep_replaced: bool = False) -> List[Dict[str, Any]]:
    """The rows of a metrics file (or of `<run_dir>/metrics.jsonl`), in order.

    A last line without its newline (a row a live run is writing, or a crash mid-write) and a
    torn line are skipped, so a run folder can be read while its run writes it. When a resumed
    run appended rows from an earlier env step than the previous session reached, the previous
    session's rows at or after that step are dropped (as TensorBoard hides them), unless
    `keep_replaced`.
    """
    p = Path(path)
    if p.is_dir():
        p = RunDir(p).metrics
    rows: List[Dict[str, Any]] = []
    session_start: Optional[float] = None
    with open(p, "r", encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):
                continue  # a row still being written by a live run (or cut short by a crash)
            line = line.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a row cut short by a crash
            start = row.get("time", 0.0) - row.get("wall_time", 0.0)
            if session_start is not None and abs(start - session_start) > 0.5 and not keep_replaced:
                step = _step(row)
                rows = [r for r in rows if _step(r) < step]
            session_start = start
            rows.append(row)
    return rows


@contextlib.contextmanager
def _naming(path: Path) -> Iterator[None]:
    """An OS error of a write to an open file (a full disk) names no file: name `path`."""
    try:
        yield
    except OSError as err:
        if err.filename is None:
            err.filename = str(path)
        raise


@contract(
    reads=("train_iter", "total_step", "train_output", "eval_value", "info_for_logging"),
    optional_reads=("env_step", "episode_info"),  # an OfflineRLContext has neither
    writes=(),
    role=Role.LEARNER,
)
class OnlineLogger:
    """The middleware made by `online_logger`; see the module docstring for what it writes."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        # on a data-parallel rank other than 0 a stand-in that writes nothing (rank 0 writes)
        return not_writing(cls) or super().__new__(cls)

    def __init__(
        self,
        cfg: Any = None,
        run_dir: Optional[PathLike] = None,
        train_show_freq: int = 1,
        tensorboard: bool = True,
        flush_secs: float = 10.0,
        name: str = "online_logger",
        files: bool = True,
    ) -> None:
        if isinstance(train_show_freq, bool) or not isinstance(train_show_freq, int) \
                or train_show_freq < 1:
            raise ValueError(
                f"{name}(train_show_freq={train_show_freq!r}): must be an int >= 1 "
                f"(log train outputs every that many train iterations)."
            )
        if cfg is None and run_dir is None:  # DI-engine's online_logger(): a default folder
            run_dir = default_run_dir(name)
        self.run_dir = resolve_run_dir(cfg, run_dir, name)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        run = RunDir(self.run_dir)
        self.metrics_path = run.metrics
        self.tb_dir = run.tb
        self._lock = threading.RLock()  # rows and checkpoint flushes may come from two threads
        self._listening: Any = None
        self._last_seen: Any = None  # the ctx of the last iteration this logger was called for
        self._logged_early: Any = None  # a ctx whose row a checkpoint made it write early
        self._last_eval: Any = None  # (ctx, env_step, train_iter, value): newest evaluation
        self.tensorboard = bool(files and tensorboard) and \
            setting(cfg, "logger.tensorboard", True) is not False
        self.train_show_freq = train_show_freq
        self.flush_secs = flush_secs
        self._start = time.time()
        self._last_flush = time.monotonic()
        self._file = self._open_metrics() if files else None  # None: W&B only
        self._writer: Any = None
        self._pending_train: List[Dict[str, Any]] = []
        self._last_train_show: Optional[int] = None
        self._closed = False
        self._wandb = wandb_sink(cfg, self.run_dir)  # logger.wandb=True: the same rows in W&B

    def _open_metrics(self):
        # A crash may have torn the last row: start on a fresh line so appended rows stay parsable.
        needs_newline = False
        if self.metrics_path.exists() and self.metrics_path.stat().st_size > 0:
            with open(self.metrics_path, "rb") as f:
                f.seek(-1, 2)
                needs_newline = f.read(1) != b"\n"
        f = open(self.metrics_path, "a", encoding="utf-8")
        if needs_newline:
            f.write("\n")
        return f

    def _tb_writer(self, step: int) -> Any:
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter  # imported only when used

            resumed = bool(RunDir(self.run_dir).tb_event_files())
            self._writer = SummaryWriter(
                log_dir=str(self.tb_dir),
                purge_step=step if resumed else None,
                flush_secs=max(1, int(self.flush_secs)),
            )
        return self._writer

    def _train_scalars(self, ctx: Any) -> Dict[str, float]:
        out = ctx.train_output
        if isinstance(out, dict):
            self._pending_train.append(out)
        elif isinstance(out, (list, tuple)):
            self._pending_train.extend(o for o in out if isinstance(o, dict))
        if not self._pending_train:
            return {}
        it = ctx.train_iter
        last = self._last_train_show
        if self.train_show_freq > 1 and last is not None and it - last < self.train_show_freq:
            return {}
        self._last_train_show = it
        means = _mean_scalars(self._pending_train)
        self._pending_train = []
        return {f"train/{k}": v for k, v in means.items()}

    def _metrics(self, ctx: Any) -> Dict[str, float]:
        """The metrics of this iteration (without the step/time columns); empty when nothing to log."""
        metrics: Dict[str, float] = {}
        if getattr(ctx, "train_output", None) is not None or self._pending_train:
            metrics.update(self._train_scalars(ctx))
        eval_value = to_scalar(getattr(ctx, "eval_value", None))
        if eval_value is not None:
            metrics["eval/return_mean"] = eval_value
            # eval_output is read only in an iteration that evaluated: whoever wrote eval_value
            # wrote it too, so the eval_value read orders the logger after it
            eval_output = getattr(ctx, "eval_output", None) or {}
            for agent, value in (eval_output.get("agent_returns") or {}).items():
                metrics[f"eval/agent_return/{agent}"] = float(value)
        episodes = getattr(ctx, "episode_info", None)
        if episodes:
            returns = [r for r in (to_scalar(e.get("return")) for e in episodes) if r is not None]
            lengths = [n for n in (to_scalar(e.get("length")) for e in episodes) if n is not None]
            if returns:
                metrics["collect/episode_return_mean"] = sum(returns) / len(returns)
            if lengths:
                metrics["collect/episode_length_mean"] = sum(lengths) / len(lengths)
            metrics["collect/episodes"] = float(len(episodes))
            for agent, value in (mean_agent_returns(episodes) or {}).items():
                metrics[f"collect/agent_return/{agent}"] = value
        for key, value in (getattr(ctx, "info_for_logging", None) or {}).items():
            x = to_scalar(value)
            if x is not None:
                metrics[str(key)] = x
        return metrics

    def __call__(self, ctx: Any) -> None:
        if self._closed:
            raise RuntimeError(
                f"online_logger for {self.run_dir} was called after close(): make a new logger "
                f"for a new run."
            )
        with self._lock:
            if self._logged_early is ctx:  # the checkpoint of this iteration already wrote it
                self._logged_early = None
            else:
                self._write_row(ctx)
            self._last_seen = ctx
        task = current_task()
        self.attach(task)
        if task.finish:
            self.flush()
        elif time.monotonic() - self._last_flush >= self.flush_secs:
            self.flush()

    def _on_eval(self, ctx: Any) -> None:
        # Two evaluations in one iteration (the one that reached stop_value, then the final
        # weights'; or two from an evaluator process): the row holds the newest, so the earlier
        # one gets a row of its own, at the env step it was made at.
        with self._lock:
            earlier, self._last_eval = self._last_eval, (
                ctx, getattr(ctx, "env_step", None), ctx.last_eval_iter,
                to_scalar(ctx.eval_value))
            if earlier is not None and earlier[0] is ctx and earlier[3] is not None \
                    and not self._closed:
                self._write_record(ctx, earlier[1], {"eval/return_mean": earlier[3]},
                                   train_iter=earlier[2])

    def _write_row(self, ctx: Any) -> None:
        if self._last_eval is not None and self._last_eval[0] is ctx:
            self._last_eval = None
        metrics = self._metrics(ctx)
        if not metrics:
            return
        self._write_record(ctx, getattr(ctx, "env_step", None), metrics)

    def _write_record(self, ctx: Any, env_step: Optional[int], metrics: Dict[str, float],
                      train_iter: Optional[int] = None) -> None:
        """One row; an offline context has no env_step: its rows are keyed by train_iter."""
        train_iter = int(ctx.train_iter if train_iter is None else train_iter)
        step = train_iter if env_step is None else int(env_step)
        now = time.time()
        record: Dict[str, Union[int, float]] = {} if env_step is None else {"env_step": step}
        record.update({
            "train_iter": train_iter,
            "total_step": int(ctx.total_step),
            "time": round(now, 3),
            "wall_time": round(now - self._start, 3),
        })
        record.update(metrics)
        if self._file is not None:
            with _naming(self.metrics_path):
                self._file.write(json.dumps(record) + "\n")
        if self.tensorboard:
            writer = self._tb_writer(step)
            for tag, value in metrics.items():
                writer.add_scalar(tag, value, global_step=step, walltime=now)
        if self._wandb is not None:
            self._wandb.log(metrics, "train_iter" if env_step is None else "env_step", step)

    def attach(self, task: Any) -> None:
        """Called by `task.use(logger)`: flush and fsync whenever a checkpoint is about to be
        declared (CHECKPOINT_EVENT), so a checkpoint never covers rows still in a buffer."""
        if self._listening is task or not callable(getattr(task, "on", None)):
            return
        self._stop_listening()
        self._listening = task
        task.on(CHECKPOINT_EVENT, self._on_checkpoint)
        task.on("eval_end", self._on_eval)

    def _stop_listening(self) -> None:
        if self._listening is not None and callable(getattr(self._listening, "off", None)):
            self._listening.off(CHECKPOINT_EVENT, self._on_checkpoint)
            self._listening.off("eval_end", self._on_eval)

    def _on_checkpoint(self, ctx: Any = None) -> None:
        # A checkpoint of an iteration this logger has not logged yet (the saver runs first in
        # the pipeline, or beside the logger in async mode): write its row now, so the
        # checkpoint covers it, and skip it when the logger's own call comes.
        with self._lock:
            if ctx is not None and not self._closed and ctx is not self._last_seen \
                    and ctx is not self._logged_early:
                self._write_row(ctx)
                self._logged_early = ctx
        self.flush(sync=True)

    def flush(self, sync: bool = False) -> None:
        """Push buffered rows and events to the OS; with `sync`, also fsync them to disk."""
        with self._lock:
            self._last_flush = time.monotonic()
            if self._file is not None and not self._file.closed:
                with _naming(self.metrics_path):
                    self._file.flush()
                    if sync:
                        os.fsync(self._file.fileno())
            if self._writer is not None:
                self._writer.flush()
                if sync:
                    self._fsync_tensorboard()

    def _fsync_tensorboard(self) -> None:
        # SummaryWriter.flush() hands the events to the OS; fsync the event files themselves.
        for path in RunDir(self.run_dir).tb_event_files():
            with open(path, "rb") as f:
                os.fsync(f.fileno())

    def close(self) -> None:
        """Flush and close the files (idempotent); called by the Task at stop."""
        if self._closed:
            return
        self._closed = True
        self._stop_listening()
        self._listening = None
        with self._lock:
            if self._file is not None:
                self._file.close()
            if self._writer is not None:
                self._writer.close()
            if self._wandb is not None:
                self._wandb.close()


def online_logger(
    cfg: Any = None,
    run_dir: Optional[PathLike] = None,
    train_show_freq: int = 1,
    tensorboard: bool = True,
) -> OnlineLogger:
    """Log each iteration's scalars to `<run_dir>/metrics.jsonl` and TensorBoard (`<run_dir>/tb`).

    `run_dir` defaults to `cfg.run_dir`; with neither (DI-engine's `online_logger()` and
    `online_logger(train_show_freq=N)`) the folder `ding_init(cfg)` chose, else
    `./runs/<script name>`, named in a log line. `train_show_freq`: log the train outputs (averaged over
    the iterations in between) once every that many train iterations. TensorBoard is written when
    `tensorboard` is true and `cfg.logger.tensorboard` is not false. Files are flushed every 10 s,
    when `current_task().finish` is set, at `close()`, and flushed and fsynced before each
    resumable checkpoint (the task's CHECKPOINT_EVENT).
    """
    return OnlineLogger(cfg, run_dir=run_dir, train_show_freq=train_show_freq, tensorboard=tensorboard)


def offline_logger(cfg: Any = None, run_dir: Optional[PathLike] = None,
                   train_show_freq: int = 1, tensorboard: bool = True) -> OnlineLogger:
    """DI-engine's logger of an offline run: the same logger, whose rows are keyed by
    `train_iter` on an `OfflineRLContext` (it has no env steps). Run folder as `online_logger`."""
    return OnlineLogger(cfg, run_dir=run_dir, train_show_freq=train_show_freq,
                        tensorboard=tensorboard, name="offline_logger")


def wandb_offline_logger(record_path: Optional[PathLike] = None, cfg: Any = None,
                         exp_config: Any = None, project_name: Optional[str] = None,
                         **options: Any) -> OnlineLogger:
    """DI-engine's W&B logger: the rows of `offline_logger` (or of an online run), also sent
    to Weights & Biases (needs the [wandb] extra). The run's config is `exp_config` (or `cfg`
    when it is a run config with a "policy" section; DI-engine passes its logger switches as
    `cfg`); the folder is `record_path`, else the config's run_dir, else as `online_logger`.
    `project_name` sets `logger.wandb_project`. DI-engine's plot options (`metric_list`,
    `env`, `model`, `anonymous`, `run_name`, `wandb_sweep`, ...) have no counterpart: they are
    named in a log line and not applied."""
    require_wandb("wandb_offline_logger")
    run_cfg = exp_config if exp_config is not None else (
        cfg if setting(cfg, "policy", None) is not None else None)
    merged: Dict[str, Any] = dict(run_cfg) if run_cfg is not None else {}
    merged["logger"] = {**dict(merged.get("logger") or {}), "wandb": True,
                        **({"wandb_project": project_name} if project_name else {})}
    if options:
        log.info("wandb_offline_logger: not applied (DI-engine plot options): %s",
                 ", ".join(sorted(options)))
    if record_path is None and not merged.get("run_dir"):
        record_path = default_run_dir("wandb_offline_logger")
    return OnlineLogger(merged, run_dir=record_path, name="wandb_offline_logger")


class WandbOnlineLogger(OnlineLogger):
    """The middleware made by `wandb_online_logger`: the rows `online_logger` writes, sent to
    Weights & Biases only (no metrics file, no TensorBoard: the script's `online_logger` writes
    those), the train statistics limited to `metric_list` when it is given."""

    def __init__(self, cfg: Any, run_dir: Optional[PathLike], metric_list: Optional[Iterable[str]],
                 plot: bool = True) -> None:
        super().__init__(cfg, run_dir=run_dir, name="wandb_online_logger", files=False)
        self.metric_list = None if metric_list is None else frozenset(map(str, metric_list))
        self.plot = plot

    def watch(self, model: Any) -> None:
        """Log `model`'s gradients to the W&B run (W&B's `watch`)."""
        assert self._wandb is not None  # made with logger.wandb=True
        self._wandb.run.watch(model)

    def _train_scalars(self, ctx: Any) -> Dict[str, float]:
        scalars = super()._train_scalars(ctx)
        if not self.plot:
            return {}
        if self.metric_list is None:
            return scalars
        return {k: v for k, v in scalars.items() if k[len("train/"):] in self.metric_list}


_WANDB_SWITCHES = ("gradient_logger", "plot_logger", "video_logger", "action_logger",
                   "return_logger")


def wandb_online_logger(record_path: Optional[PathLike] = None, cfg: Any = None,
                        exp_config: Any = None, metric_list: Optional[Iterable[str]] = None,
                        env: Any = None, model: Any = None, project_name: Optional[str] = None,
                        **options: Any) -> Any:
    """DI-engine's W&B logger of an online run, used beside `online_logger`: each iteration's
    scalars (as `online_logger` names them: `train/<name>`, `eval/return_mean`, `collect/...`)
    go to a Weights & Biases run against `env_step` (needs the [wandb] extra); it writes no
    file of its own, so the script's `online_logger` stays the one writer of metrics.jsonl.
    `metric_list` (e.g. `policy.monitor_vars()`): the train statistics to send (None: all).
    `cfg`: DI-engine's switches {gradient_logger, plot_logger, video_logger, action_logger,
    return_logger} (all False but plot_logger by default): `plot_logger` False sends no train
    statistics, `gradient_logger` True has W&B watch `model`'s gradients; the video, action
    and return plots have no counterpart (`rlpipe eval RUN --video DIR` adds videos to the W&B
    run). A `cfg` with a "policy" section is taken as the run's config instead, as is
    `exp_config`. The folder (W&B's files go to `<folder>/wandb`) is `record_path`, else the
    config's run_dir, else as `online_logger`'s. `project_name` sets `logger.wandb_project`.
    Other DI-engine options (`anonymous`, `run_name`, `wandb_sweep`) are named in a log line
    and not applied. In a distributed run only the learner logs (elsewhere a no-op)."""
    require_wandb("wandb_online_logger")
    task = current_task()
    if task is not None and task.router.is_active and not task.has_role(Role.LEARNER):
        return task.void()
    switches: Dict[str, Any] = {"gradient_logger": False, "plot_logger": True}
    run_cfg = exp_config
    if cfg is not None and setting(cfg, "policy", None) is not None:
        run_cfg = cfg if run_cfg is None else run_cfg
    elif cfg is not None:
        unknown = sorted(set(dict(cfg)) - set(_WANDB_SWITCHES))
        if unknown:
            raise ValueError(f"wandb_online_logger(cfg=...): unknown switch(es) {unknown}; "
                             f"DI-engine's are {list(_WANDB_SWITCHES)}")
        switches.update(dict(cfg))
    if switches["gradient_logger"] and model is None:
        raise ValueError("wandb_online_logger(cfg={'gradient_logger': True}) watches the "
                         "gradients of `model`: pass model=policy's network")
    skipped = sorted(k for k in ("video_logger", "action_logger", "return_logger")
                     if switches.get(k))
    skipped += sorted(options) + (["env"] if env is not None else [])
    if skipped:
        log.info("wandb_online_logger: not applied (DI-engine plot options): %s",
                 ", ".join(skipped))
    merged: Dict[str, Any] = dict(run_cfg) if run_cfg is not None else {}
    merged["logger"] = {**dict(merged.get("logger") or {}), "wandb": True,
                        **({"wandb_project": project_name} if project_name else {})}
    if record_path is None and not merged.get("run_dir"):
        record_path = default_run_dir("wandb_online_logger")
    logger = WandbOnlineLogger(merged, record_path, metric_list, bool(switches["plot_logger"]))
    if switches["gradient_logger"]:
        logger.watch(model)
    return logger


__all__ = ["OnlineLogger", "WandbOnlineLogger", "offline_logger", "online_logger",
           "read_metrics", "to_scalar", "wandb_offline_logger", "wandb_online_logger"]
