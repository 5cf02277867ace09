"""Set-up of a hand-written training script: seeds, logging and its run folder.

DI-engine's scripts begin with `ding_init(cfg)` and `set_pkg_seed(cfg.seed)`; these are the
same calls here. `set_pkg_seed` seeds Python's, NumPy's and torch's global generators, which
is what makes such a script repeat: a policy or buffer made without a seed of its own draws
its generator's seed from them. `ding_init` also names the script's run folder, which
`online_logger()` and `offline_logger()` write to when given no config or folder.
"""
from __future__ import annotations

import logging
import random
import sys
from pathlib import Path
from typing import Any, Optional

log = logging.getLogger(__name__)

_run_dir: Optional[Path] = None  # the folder ding_init chose for this process


def set_pkg_seed(seed: int, use_cuda: bool = True) -> None:
    """Seed `random`, NumPy's and torch's global generators (and CUDA's when `use_cuda` and
    CUDA is available) with `seed`. (NumPy and torch are imported here: `import rlpipe` stays
    free of them.)"""
    import numpy as np
    import torch

    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"set_pkg_seed(seed={seed!r}): the seed must be an int, e.g. "
                        f"set_pkg_seed(cfg.seed)")
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if use_cuda and torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def _get(cfg: Any, key: str) -> Any:
    return cfg.get(key) if hasattr(cfg, "get") else getattr(cfg, key, None)


def ding_init(cfg: Any) -> Path:
    """Prepare this process for a run of `cfg`: INFO logging to stderr (when the script set no
    handler), `set_pkg_seed(cfg.seed)` when the config has a seed, and the run folder:
    `cfg.run_dir`, else `./runs/<cfg.exp_name>`, written back to `cfg.run_dir` so that
    `CkptSaver(cfg, policy)` uses it too. Returns the folder (created on first write)."""
    global _run_dir
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    seed = _get(cfg, "seed")
    if seed is not None:
        set_pkg_seed(seed)
    chosen = _get(cfg, "run_dir")
    if not chosen:
        chosen = Path("runs") / str(_get(cfg, "exp_name") or _script_name())
        try:
            cfg["run_dir"] = str(chosen)
        except TypeError as err:
            raise TypeError(f"ding_init(cfg): cannot set run_dir on a {type(cfg).__name__} "
                            f"({err}); pass the config dict (EasyDict) the zoo resolves") from err
    _run_dir = Path(chosen)
    log.info("ding_init: seed %s, run folder %s", seed, _run_dir)
    return _run_dir


def _script_name() -> str:
    stem = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else ""
    return stem or "rlpipe"


def default_run_dir(who: str) -> Path:
    """The run folder of a logger given none: the one `ding_init` chose, else
    `./runs/<script name>`; logged, so that a script's user learns where its files went."""
    chosen = _run_dir if _run_dir is not None else Path("runs") / _script_name()
    log.info("%s: no config or run_dir given: writing to %s", who, chosen.resolve())
    return chosen


__all__ = ["default_run_dir", "ding_init", "set_pkg_seed"]
