"""A run: its folder, resolved config, log file and seeds."""
from __future__ import annotations

import datetime
import json
import logging
import os
import pathlib
import random
from typing import Any, Mapping, Optional

import numpy as np
import torch

from rlpipe.config import to_plain

log = logging.getLogger("rlpipe")


def new_run_dir(name: str, root: str = "runs") -> str:
    """`runs/<name>/<timestamp>/`, created; a numeric suffix avoids collisions."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = pathlib.Path(root) / name / stamp
    path, n = base, 1
    while path.exists():
        path = base.with_name(f"{stamp}-{n}")
        n += 1
    path.mkdir(parents=True)
    return str(path)


def write_config(run_dir: str, name: str, cfg: Mapping) -> None:
    """The resolved config, as JSON, in `<run_dir>/config.json` (with the zoo entry's name)."""
    payload = {"entry": name, "config": to_plain(cfg)}
    target = pathlib.Path(run_dir) / "config.json"
    tmp = target.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=2, default=str))
    os.replace(tmp, target)


def read_config(run_dir: str) -> tuple[str, dict]:
    """(entry name, config) of a run folder written by `write_config`."""
    path = pathlib.Path(run_dir) / "config.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"{run_dir!r} is not an rlpipe run folder: it has no config.json. Pass the folder "
            f"that `rlpipe train` printed (runs/<entry>/<timestamp>/)."
        )
    payload = json.loads(path.read_text())
    return payload["entry"], payload["config"]


def attach_log_file(run_dir: str) -> Optional[logging.Handler]:
    """Send rlpipe's log records to `<run_dir>/log.txt` (and INFO to the console once).

    Returns the handler to remove at the end of the run, or None when this process already
    writes that file (the learner of a local distributed run runs inside the `rlpipe train`
    process, which attached it first): a second handler would write every line twice."""
    path = (pathlib.Path(run_dir) / "log.txt").resolve()
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


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch for a reproducible run."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def limit_torch_threads(n: Optional[int] = None) -> None:
    """Small networks run fastest on one intra-op thread, and it leaves the other core to the
    envs or to the second pipeline thread in async mode."""
    torch.set_num_threads(n or 1)


def describe(cfg: Any) -> str:
    return json.dumps(to_plain(cfg), default=str)
