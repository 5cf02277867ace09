"""Weights & Biases beside TensorBoard: `logger.wandb=True` in a run's config.

`online_logger` hands every row it writes to a `WandbSink`: the same scalars, under the same
names, against the same step (`env_step`, or `train_iter` offline, logged as a metric of its own
so the rows of a resumed run may go back in steps). The run's resolved config is the W&B config.
Files go under `<run_dir>/wandb/` (W&B's own layout); the W&B run id is kept in
`<run_dir>/wandb/rlpipe_run_id`, so a resumed run, and `rlpipe eval RUN --video DIR` (which adds
its videos), log to the same W&B run. `WANDB_MODE=offline` logs without a network
(`wandb sync <run_dir>/wandb/offline-run-*` uploads later). W&B's service finishes writing
its files in the background after `close()`; at the end of a process it is waited for, and
`wandb.teardown()` waits for it within one. `logger.wandb_mode` ("online", "offline") overrides
WANDB_MODE. Other settings: `logger.wandb_project`
(default "rlpipe"); W&B's own environment variables (WANDB_ENTITY, ...) apply.
"""
from __future__ import annotations

import pathlib
import secrets
from typing import Any, Dict, Iterable, Optional

from rlpipe.config import to_plain
from rlpipe.runs import RunDir

from ._cfg import setting

ID_FILE = "rlpipe_run_id"


def require_wandb(who: str) -> None:
    """One-line error naming the [wandb] extra when `who` needs wandb and it is missing."""
    try:
        import wandb  # noqa: F401
    except ImportError as err:
        raise ImportError(f"{who} needs wandb, which is not installed ({err}); install it with: "
                          f"pip install \"rlpipe[wandb]\"") from err


def _wandb() -> Any:
    try:
        import wandb
    except ImportError as err:
        raise ImportError(f"logger.wandb=True needs wandb, which is not installed ({err}); "
                          f"install it with: pip install \"rlpipe[wandb]\", or set "
                          f"logger.wandb=False") from err
    return wandb


class WandbSink:
    """One W&B run for one rlpipe run folder: `log(metrics, step_key, step)`, `log_videos`,
    `close()`."""

    def __init__(self, cfg: Any, run_dir: pathlib.Path) -> None:
        mode = setting(cfg, "logger.wandb_mode", None)
        if mode not in (None, "online", "offline", "disabled"):
            raise ValueError(f"logger.wandb_mode={mode!r}: use 'online', 'offline', 'disabled' "
                             f"or None (WANDB_MODE decides)")
        wandb = _wandb()
        folder = RunDir(run_dir).wandb
        folder.mkdir(parents=True, exist_ok=True)
        id_file = folder / ID_FILE
        run_id = id_file.read_text().strip() if id_file.is_file() else secrets.token_hex(4)
        plain = to_plain(cfg) if cfg is not None else {}
        try:
            self.run = wandb.init(
                project=setting(cfg, "logger.wandb_project", "rlpipe") or "rlpipe",
                mode=mode, dir=str(run_dir), id=run_id, resume="allow", reinit="create_new",
                name=f"{pathlib.Path(run_dir).parent.name}/{pathlib.Path(run_dir).name}",
                config=plain, settings=wandb.Settings(console="off", silent=True,
                                                      x_disable_stats=True))
        except wandb.errors.UsageError as err:
            raise ValueError(f"logger.wandb=True: W&B refused to start ({err}); log in with "
                             f"`wandb login`, or log offline with WANDB_MODE=offline") from err
        id_file.write_text(run_id)
        self._axes: set = set()

    def log(self, metrics: Dict[str, float], step_key: str, step: int) -> None:
        """One row of scalars at `step` of axis `step_key` (env_step or train_iter)."""
        if step_key not in self._axes:
            self.run.define_metric(step_key)
            self.run.define_metric("*", step_metric=step_key)
            self._axes.add(step_key)
        self.run.log({step_key: step, **metrics})

    def log_videos(self, files: Iterable[str], fps: Optional[int] = None) -> None:
        """mp4 files, one W&B video each under `video/<file name>`."""
        wandb = _wandb()
        for path in files:
            name = pathlib.Path(path).stem
            self.run.log({f"video/{name}": wandb.Video(str(path), format="mp4", fps=fps)})

    def close(self) -> None:
        self.run.finish()


def wandb_sink(cfg: Any, run_dir: pathlib.Path) -> Optional[WandbSink]:
    """A sink when the config says `logger.wandb=True`, else None."""
    if not setting(cfg, "logger.wandb", False):
        return None
    return WandbSink(cfg, run_dir)


def log_run_videos(cfg: Any, run_dir: pathlib.Path, files: Iterable[str]) -> bool:
    """Add videos to a run's W&B run when its config has logger.wandb=True; True if it did."""
    sink = wandb_sink(cfg, run_dir)
    if sink is None:
        return False
    try:
        sink.log_videos(files)
    finally:
        sink.close()
    return True
