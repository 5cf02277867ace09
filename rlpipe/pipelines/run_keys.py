"""The run sections of a run's config (everything but `policy`): each key's default and
meaning, in one table.

`RUN_KEYS` holds every run key (dotted) with its default and what it means, in the order
`rlpipe config` prints them. A pipeline's defaults are `run_defaults(without, changed)`: the
table without the keys that do not apply to that pipeline, with the few defaults it changes.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

RUN_KEYS: Dict[str, Tuple[Any, str]] = {
    "seed": (0, "seed of the run: envs, network init, exploration, replay sampling"),
    "run_dir": (None, "the run folder (set by `rlpipe train`: runs/<name>/<timestamp>/)"),
    "async_mode": (False, "overlap collection and evaluation with training (`--async`)"),
    "max_env_step": (100_000, "stop after this many env steps (`--max-env-steps`)"),
    "max_train_iter": (None, "stop after this many learn steps (None: no limit; offline: the "
                             "budget)"),
    "max_wall_time": (None, "stop after this many seconds (None: no limit)"),
    "progress": (True, "show a progress bar (`--no-progress` turns it off)"),
    "resume_from": (None, "checkpoint this run continues from (set by `--resume`)"),
    "init_from": (None, "checkpoint whose weights this new run starts from (set by "
                        "`--init-from RUN_DIR`: its best.pt, else final.pt)"),
    "init_from_optim": (False, "with init_from: load the optimiser states too "
                               "(`--init-from-optim`); else they start fresh"),
    "dataset.id": (None, "the Minari data set an offline run trains on (`--dataset ID`; "
                         "`rlpipe dataset list` shows the local ones)"),
    "env.id": (None, "gymnasium id, name registered with rlpipe.envs.register_env, or "
                     "module:Factory (offline: the eval env; None: the data set's)"),
    "env.n_envs": (8, "parallel envs the collector steps"),
    "env.eval_n_envs": (5, "parallel envs the evaluator steps"),
    "env.mode": ("auto", "vectorisation: 'sync', 'async' (subprocesses), 'native' or 'auto'"),
    "env.stop_value": (None, "finish when the mean eval return reaches this (None: run the "
                             "budget)"),
    "env.step_timeout": (None, "seconds an env step may take before the env is restarted "
                               "(async mode)"),
    "env.env_kwargs": ({}, "keyword arguments for gymnasium.make (or the env factory)"),
    "env.eval_env_kwargs": ({}, "the evaluator's env kwargs, over env_kwargs (Atari: "
                                "{'atari_preset': 'eval'})"),
    # Counted per env manager: an env that crashes now and then runs on; a crash loop stops.
    "env.max_restarts": (10, "env restarts (crashes, hangs) allowed within restart_window "
                             "steps; one more stops the run, naming the env and its last "
                             "traceback"),
    "env.restart_window": (1000, "batched env steps over which max_restarts counts (None: the "
                                 "whole run)"),
    "env.action_masks": (True, "hand the env's action masks to the policy (False: ignore them)"),
    "env.action_mask_fn": (None, "'module:function' giving the action mask from (obs, infos); "
                                 "None: the env's info['action_mask'] or obs key 'action_mask'"),
    "replay.capacity": (100_000, "transitions the replay buffer holds"),
    "replay.prioritized": (False, "prioritised replay (sum tree) instead of uniform sampling"),
    "replay.alpha": (0.6, "prioritised replay: priority exponent"),
    "replay.beta": (0.4, "prioritised replay: importance-sampling exponent"),
    "replay.min_samples": (1000, "transitions in the buffer before learning starts"),
    "replay.max_updates_per_step": (None, "learn steps allowed per collected env step "
                                          "(None: update_per_collect / n_sample)"),
    "replay.save_buffer": (True, "checkpoints save the replay buffer, so --resume is exact"),
    "replay.frames": (None, "store each frame of uint8 frame-stack observations once (True), "
                            "never (False), or None: when the env's observations are such "
                            "stacks"),
    "replay.frame_stack": (4, "frames per observation, for replay.frames (the axis of this "
                              "size, first or last, is the frame axis)"),
    "logger.tensorboard": (True, "write TensorBoard events to <run_dir>/tb"),
    "logger.wandb": (False, "also log the metrics and config to Weights & Biases, files under "
                            "<run_dir>/wandb (rlpipe[wandb]; WANDB_MODE=offline: no network)"),
    "logger.wandb_project": ("rlpipe", "the W&B project of logger.wandb"),
    "logger.wandb_mode": (None, "W&B's mode: 'online', 'offline' (files only, `wandb sync` "
                                "uploads them later) or None (WANDB_MODE decides, else online)"),
    "logger.train_show_freq": (100, "log the learner's statistics (averaged) every this many "
                                    "train iterations"),
    "ckpt.train_freq": (5000, "write a resumable checkpoint every this many learn steps"),
    # Distributed runs: `rlpipe train --collectors N` (docs/distributed.md).
    "parallel.collectors": (0, "collector processes of a distributed run (`--collectors`)"),
    "parallel.evaluator": (False, "evaluate in a process of its own (`--evaluator`)"),
    "parallel.publish_every": (None, "learner publishes weights every N learn steps (None: "
                                     "every one)"),
    "parallel.batches_per_iter": (1, "collector batches the learner takes per iteration"),
    "parallel.queue_size": (None, "collector batches in flight before collectors wait (None: "
                                  "default)"),
    "parallel.backend": ("ray", "'ray' (actors, one machine or a cluster) or 'local' (child "
                                "processes)"),
    "parallel.resources": (None, "Ray: processes placed on nodes by custom resource, e.g. "
                                 "{'collector 1': 'worker_node'} (None: wherever Ray has room)"),
    "parallel.child_nice": (None, "CPU priority offset of the local backend's children (None: "
                                  "10; 0 for a real-time collector that must keep its clock)"),
}


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
                       f"rlpipe/pipelines/run_keys.py lists them")
    out: Dict[str, Any] = {}
    for key, (default, _) in RUN_KEYS.items():
        if key in without or key.split(".")[0] in without:
            continue
        value = changed.pop(key, default)
        *sections, name = key.split(".")
        node = out
        for section in sections:
            node = node.setdefault(section, {})
        node[name] = dict(value) if isinstance(value, dict) else value
    if changed:
        raise KeyError(f"run_defaults: {sorted(changed)} are changed and left out at once; "
                       f"drop them from one of the two")
    return out


__all__ = ["RUN_KEYS", "run_defaults"]
