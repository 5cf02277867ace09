"""What each config key means, for `rlpipe config`.

Meanings come from where the defaults are maintained:

- the run sections (RUN_DEFAULTS of `_offpolicy.py` / `_onpolicy.py` / `_offline.py`):
  `RUN_MEANINGS` below, one line per key; a test checks that every key of the tables has one;
- a policy's own keys: the end-of-line comment beside the key in its `default_config()` (the
  policy modules already document every setting that way), or the policy class's optional
  `config_meanings` dict (dotted key below `policy.` → meaning), which wins;
- the pipeline settings every policy section carries (`PIPELINE_DEFAULTS`): `PIPELINE_MEANINGS`.
"""
from __future__ import annotations

import inspect
import io
import json
import textwrap
import tokenize
from typing import Any, Dict, List, Mapping

RUN_MEANINGS: Dict[str, str] = {
    "seed": "seed of the run: envs, network init, exploration, replay sampling",
    "run_dir": "the run folder (set by `rlpipe train`: runs/<name>/<timestamp>/)",
    "async_mode": "overlap collection and evaluation with training (`--async`)",
    "max_env_step": "stop after this many env steps (`--max-env-steps`)",
    "max_train_iter": "stop after this many learn steps (None: no limit; offline: the budget)",
    "max_wall_time": "stop after this many seconds (None: no limit)",
    "progress": "show a progress bar (`--no-progress` turns it off)",
    "resume_from": "checkpoint this run continues from (set by `--resume`)",
    "init_from": "checkpoint whose weights this new run starts from (set by `--init-from "
                 "RUN_DIR`: its best.pt, else final.pt)",
    "init_from_optim": "with init_from: load the optimiser states too (`--init-from-optim`); "
                       "else they start fresh",
    "dataset.id": "the Minari data set an offline run trains on (`--dataset ID`; `rlpipe "
                  "dataset list` shows the local ones)",
    "env.id": "gymnasium id, name registered with rlpipe.envs.register_env, or module:Factory "
              "(offline: the eval env; None: the data set's)",
    "env.n_envs": "parallel envs the collector steps",
    "env.eval_n_envs": "parallel envs the evaluator steps",
    "env.mode": "vectorisation: 'sync', 'async' (subprocesses), 'native' or 'auto'",
    "env.stop_value": "finish when the mean eval return reaches this (None: run the budget)",
    "env.step_timeout": "seconds an env step may take before the env is restarted (async mode)",
    "env.env_kwargs": "keyword arguments for gymnasium.make (or the env factory)",
    "env.eval_env_kwargs": "the evaluator's env kwargs, over env_kwargs (Atari: "
                           "{'atari_preset': 'eval'})",
    "env.action_masks": "hand the env's action masks to the policy (False: ignore them)",
    "env.action_mask_fn": "'module:function' giving the action mask from (obs, infos); None: "
                          "the env's info['action_mask'] or obs key 'action_mask'",
    "env.max_restarts": "env restarts (crashes, hangs) allowed within restart_window steps; one "
                        "more stops the run, naming the env and its last traceback",
    "env.restart_window": "batched env steps over which max_restarts counts (None: the whole run)",
    "replay.capacity": "transitions the replay buffer holds",
    "replay.prioritized": "prioritised replay (sum tree) instead of uniform sampling",
    "replay.alpha": "prioritised replay: priority exponent",
    "replay.beta": "prioritised replay: importance-sampling exponent",
    "replay.min_samples": "transitions in the buffer before learning starts",
    "replay.max_updates_per_step": "learn steps allowed per collected env step "
                                   "(None: update_per_collect / n_sample)",
    "replay.frames": "store each frame of uint8 frame-stack observations once (True), never "
                     "(False), or None: when the env's observations are such stacks",
    "replay.frame_stack": "frames per observation, for replay.frames (the axis of this size, "
                          "first or last, is the frame axis)",
    "replay.save_buffer": "checkpoints save the replay buffer, so --resume is exact",
    "logger.tensorboard": "write TensorBoard events to <run_dir>/tb",
    "logger.wandb": "also log the metrics and config to Weights & Biases, files under "
                    "<run_dir>/wandb (rlpipe[wandb]; WANDB_MODE=offline: no network)",
    "logger.wandb_project": "the W&B project of logger.wandb",
    "logger.wandb_mode": "W&B's mode: 'online', 'offline' (files only, `wandb sync` uploads "
                         "them later) or None (WANDB_MODE decides, else online)",
    "logger.train_show_freq": "log the learner's statistics (averaged) every this many train "
                              "iterations",
    "ckpt.train_freq": "write a resumable checkpoint every this many learn steps",
    "parallel.collectors": "collector processes of a distributed run (`--collectors`)",
    "parallel.evaluator": "evaluate in a process of its own (`--evaluator`)",
    "parallel.publish_every": "learner publishes weights every N learn steps (None: every one)",
    "parallel.batches_per_iter": "collector batches the learner takes per iteration",
    "parallel.queue_size": "collector batches in flight before collectors wait (None: default)",
    "parallel.backend": "'ray' (actors, one machine or a cluster) or 'local' (child processes)",
    "parallel.child_nice": "CPU priority offset of the local backend's children (None: 10; 0 "
                           "for a real-time collector that must keep its clock)",
    "imports": "modules imported before the run (`--import`), e.g. ones that register "
               "an env or a policy",
}

PIPELINE_MEANINGS: Dict[str, str] = {
    "collect.n_sample": "env steps collected per iteration (summed over envs)",
    "collect.n_episode": "episodes collected per iteration (episode collectors)",
    "collect.random_collect_size": "first env steps taken with uniformly random actions",
    "other.eps.type": "epsilon schedule of eps-greedy exploration ('linear' or 'exp')",
    "other.eps.start": "epsilon at the start",
    "other.eps.end": "epsilon at the end of the decay",
    "other.eps.decay": "env steps over which epsilon decays",
    "other.eps.per_env_step": "recompute epsilon before every env step (SB3's way) instead of "
                              "once per iteration",
    "learn.update_per_collect": "learn steps per iteration",
    "eval.evaluator.eval_freq": "evaluate every this many train iterations (learn steps)",
    "eval.evaluator.n_episode": "episodes per evaluation",
}


def comment_meanings(policy_cls: type) -> Dict[str, str]:
    """`{dotted key: comment}` from the end-of-line comments in `policy_cls.default_config()`
    and in those of its base classes (a subclass such as CQL on SAC states only the keys it adds
    or changes; its comment wins for a key both write)."""
    found: Dict[str, str] = {}
    for klass in reversed(policy_cls.__mro__):
        method = klass.__dict__.get("default_config")
        if method is not None:
            found.update(_source_comments(getattr(method, "__func__", method)))
    return found


def _source_comments(method: Any) -> Dict[str, str]:
    """`{dotted key: comment}` from the source of one `default_config`; keys are found as
    `name=` inside `dict(...)`/`EasyDict(...)` calls, nested sections as `name=dict(`."""
    try:
        source = textwrap.dedent(inspect.getsource(method))
    except (OSError, TypeError):  # defined in a REPL or built dynamically: no source to read
        return {}
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    found: Dict[str, str] = {}
    path: List[str] = []
    opened: List[bool] = []  # per open bracket: did it open a named section?
    pending: List[tuple] = []  # (dotted key, line) waiting for a comment on that line
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.OP and tok.string in "([{":
            prev = tokens[i - 2] if i >= 2 else None
            named = (tok.string == "(" and prev is not None and prev.type == tokenize.OP
                     and prev.string == "=" and tokens[i - 1].string in ("dict", "EasyDict")
                     and i >= 3 and tokens[i - 3].type == tokenize.NAME)
            if named:
                path.append(tokens[i - 3].string)
            opened.append(named)
        elif tok.type == tokenize.OP and tok.string in ")]}":
            if opened and opened.pop():
                path.pop()
        elif (tok.type == tokenize.NAME and i + 1 < len(tokens) and tokens[i + 1].string == "="
              and opened and (len(opened) == 1 or opened[-1])):
            is_section = i + 3 < len(tokens) and tokens[i + 2].string in ("dict", "EasyDict") \
                and tokens[i + 3].string == "("
            if not is_section:
                pending.append((".".join(path + [tok.string]), tok.start[0]))
        elif tok.type == tokenize.COMMENT:
            text = tok.string.lstrip("#").strip()
            for key, line in pending:
                if line == tok.start[0] and text:
                    found[key] = text
            pending = [(k, ln) for k, ln in pending if ln > tok.start[0]]
    return found


def config_meanings(policy_cls: type, with_imports: bool = False) -> Dict[str, str]:
    """`{dotted key: meaning}` for a whole run config of `policy_cls`."""
    meanings = {k: v for k, v in RUN_MEANINGS.items() if with_imports or k != "imports"}
    policy = {**PIPELINE_MEANINGS, **comment_meanings(policy_cls),
              **dict(getattr(policy_cls, "config_meanings", {}) or {})}
    meanings.update({f"policy.{k}": v for k, v in policy.items()})
    return meanings


OPAQUE_KEYS = ("env.env_kwargs", "env.eval_env_kwargs")
"""Dicts that are one value (the env's own keyword arguments), not a config section."""


def leaf_keys(cfg: Mapping, prefix: str = "") -> List[str]:
    """Dotted keys of the non-section values of `cfg` (an empty dict, and the dicts in
    `OPAQUE_KEYS`, count as a value)."""
    keys: List[str] = []
    for key, value in cfg.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value and dotted not in OPAQUE_KEYS:
            keys += leaf_keys(value, dotted + ".")
        else:
            keys.append(dotted)
    return keys


def _lookup(cfg: Mapping, dotted: str) -> Any:
    node: Any = cfg
    for part in dotted.split("."):
        node = node[part]
    return node


def describe_config(cfg: Mapping, meanings: Mapping[str, str],
                    sources: Mapping[str, str] = None) -> str:
    """One line per key: `key = value  # meaning` (values as JSON where they can be), and
    `[source]` after the meaning for the keys `sources` names (where the value comes from)."""
    keys = leaf_keys(cfg)
    width = max((len(k) for k in keys), default=0)
    lines = []
    for key in keys:
        value = _lookup(cfg, key)
        try:
            shown = json.dumps(list(value) if isinstance(value, tuple) else value)
        except TypeError:
            shown = repr(value)
        text = f"{key:<{width}} = {shown}"
        meaning = meanings.get(key) or ""
        source = (sources or {}).get(key)
        if source:
            meaning = f"{meaning} [{source}]" if meaning else f"[{source}]"
        lines.append(f"{text:<{width + 20}}  # {meaning}" if meaning else text)
    return "\n".join(lines)
