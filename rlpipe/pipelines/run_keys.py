"""Which run keys each pipeline takes, and the defaults it changes: one table, `PIPELINE_RUNS`,
from which every pipeline's run defaults (`RUN_DEFAULTS`) come.

The run keys themselves (default, meaning, range) are declared in `rlpipe.schema.RUN_KEYS`; a
pipeline's defaults are that table without the keys that do not apply to it, with the few
defaults it changes (`run_defaults(without, changed)`).
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

from rlpipe.schema import RUN_KEYS

def run_defaults(without: Iterable[str] = (),
                 changed: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The nested run sections of one pipeline: every key of `RUN_KEYS` but those `without`
    names (a dotted key, or a section such as "replay" for all of its keys), with the defaults
    of `changed` (dotted key → value) instead of the table's."""
    without, changed = set(without), dict(changed or {})
    unknown = sorted((without | set(changed)) - set(RUN_KEYS)
                     - {key.split(".")[0] for key in RUN_KEYS})
    if unknown:
        raise KeyError(f"run_defaults: {unknown} are no run keys; RUN_KEYS in "
                       f"rlpipe/schema.py lists them")
    out: Dict[str, Any] = {}
    for key, declared in RUN_KEYS.items():
        if key in without or key.split(".")[0] in without:
            continue
        value = changed.pop(key, declared.default)
        *sections, name = key.split(".")
        node = out
        for section in sections:
            node = node.setdefault(section, {})
        node[name] = dict(value) if isinstance(value, dict) else value
    if changed:
        raise KeyError(f"run_defaults: {sorted(changed)} are changed and left out at once; "
                       f"drop them from one of the two")
    return out



# Pipeline → (run keys or sections it does not take, {dotted key: the default it changes}).
PIPELINE_RUNS: Dict[str, Tuple[Tuple[str, ...], Dict[str, Any]]] = {
    "off-policy": (("dataset", "logger.train_show_freq"), {}),
    # No replay buffer; `--init-from` is for off-policy and offline runs. Distributed, the
    # learner computes GAE on each collector rollout it receives (one per iteration:
    # batches_per_iter must stay 1, a rollout is one stretch of time) and publishes its weights
    # after every update.
    "on-policy": (("init_from", "init_from_optim", "dataset", "replay", "logger.train_show_freq",
                   "parallel.child_nice"), {}),
    # No env steps, collector or replay: the budget is in learn steps. --async runs an evaluator
    # process beside the trainer on the local backend, at full CPU priority (publish_every None:
    # the trainer publishes its weights every eval_freq updates).
    "offline": (("max_env_step", "env.n_envs", "replay", "parallel.batches_per_iter"),
                {"max_train_iter": 10_000, "parallel.backend": "local", "parallel.child_nice": 0}),
}

#: Pipeline → the nested run sections of its default config.
RUN_DEFAULTS: Dict[str, Dict[str, Any]] = {
    pipeline: run_defaults(without, changed)
    for pipeline, (without, changed) in PIPELINE_RUNS.items()}

__all__ = ["PIPELINE_RUNS", "RUN_DEFAULTS", "RUN_KEYS", "run_defaults"]
