"""What `--resume` refuses before it loads anything: a changed env, a budget already spent."""
from __future__ import annotations

from typing import Any, Iterable, Mapping

# keys a resumed run cannot change: its weights, buffer and env states belong to them
FROZEN_ON_RESUME = ("env.id", "seed", "dataset.id")


def check_resume_overrides(run_dir: str, plain: Mapping[str, Any], overrides: Iterable[str]) -> None:
    """Refuse `--set` of a key in `FROZEN_ON_RESUME` to a value other than the run's own."""
    for item in overrides:
        key, _, value = item.partition("=")
        key = key.strip()
        if key not in FROZEN_ON_RESUME:
            continue
        node: Any = plain
        for part in key.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if str(node) == value.strip():
            continue
        raise ValueError(f"--resume {run_dir}: --set {key}={value.strip()} cannot change a run "
                         f"that used {key}={node}; start a new run for it (`rlpipe train ... "
                         f"--set {key}={value.strip()}`)")


def check_budget_left(run_dir: str, cfg: Any, checkpoint: Mapping[str, Any]) -> None:
    """Refuse to resume a run whose checkpoint already reached `max_env_step` (an offline run:
    `max_train_iter`)."""
    meta = checkpoint.get("meta", {}) or {}
    if "max_env_step" not in cfg:  # offline: a budget of train iterations
        done, budget = meta.get("train_iter"), cfg.get("max_train_iter")
        if done is not None and budget is not None and int(done) >= int(budget):
            raise ValueError(f"--resume {run_dir}: the run already reached its budget "
                             f"({int(done)} of max_train_iter {int(budget)} train iterations); "
                             f"to train on, raise it with --set max_train_iter=N (N > {int(done)})")
        return
    done = meta.get("env_step")
    if done is None:
        done = (checkpoint.get("ctx", {}) or {}).get("env_step")
    budget = cfg.get("max_env_step")
    if done is not None and budget is not None and int(done) >= int(budget):
        raise ValueError(f"--resume {run_dir}: the run already reached its budget "
                         f"({int(done)} of max_env_step {int(budget)} env steps); to train on, "
                         f"raise it with --max-env-steps N (N > {int(done)})")
