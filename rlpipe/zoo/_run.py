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


def attach_log_file(run_dir: str) -> logging.Handler:
    """Send rlpipe's log records to `<run_dir>/log.txt` (and INFO to the console once)."""
    handler = logging.FileHandler(pathlib.Path(run_dir) / "log.txt")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("rlpipe")
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
