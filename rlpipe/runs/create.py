"""A new run: its folder, its resolved config (config.json) and its log file."""
from __future__ import annotations

import datetime
import json
import logging
import pathlib
from typing import Any, Mapping, Optional

from rlpipe.config import to_plain

from ._layout import RunDir

log = logging.getLogger("rlpipe")


def new_run_dir(name: str, root: str = "runs") -> str:
    """`runs/<name>/<timestamp>/`, created; a numeric suffix avoids collisions (also between
    two runs started in the same second: the folder is claimed by an exclusive mkdir)."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = pathlib.Path(root) / name / stamp
    base.parent.mkdir(parents=True, exist_ok=True)
    path, n = base, 1
    while True:
        try:
            path.mkdir()
            return str(path)
        except FileExistsError:
            path = base.with_name(f"{stamp}-{n}")
            n += 1


def write_config(run_dir: str, name: str, cfg: Mapping) -> None:
    """The resolved config, as JSON, in the run's config.json (with the zoo entry's name),
    written atomically. `resume_trust` (a choice of one resume, not of the run) is left out."""
    plain = {k: v for k, v in to_plain(cfg).items() if k != "resume_trust"}
    RunDir(run_dir).write_config({"entry": name, "config": plain})


def read_config(run_dir: str) -> tuple[str, dict]:
    """(entry name, config) of a run folder written by `write_config`; a one-line error naming
    config.json when it is missing, empty, truncated or not an rlpipe config."""
    return RunDir(run_dir).read_config()


def attach_log_file(run_dir: str) -> Optional[logging.Handler]:
    """Send rlpipe's log records to the run's log.txt (and INFO to the console once).

    Returns the handler to remove at the end of the run, or None when this process already
    writes that file (the learner of a local distributed run runs inside the `rlpipe train`
    process, which attached it first): a second handler would write every line twice."""
    path = pathlib.Path(RunDir(run_dir).log).resolve()
    root = logging.getLogger("rlpipe")
    for existing in root.handlers:
        if isinstance(existing, logging.FileHandler) and \
                pathlib.Path(existing.baseFilename).resolve() == path:
            return None
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > logging.INFO:
        root.setLevel(logging.INFO)
    return handler


def describe(cfg: Any) -> str:
    return json.dumps(to_plain(cfg), default=str)
