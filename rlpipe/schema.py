"""The config schema: each key's default, allowed range and meaning, declared side by side.

A key is declared as ``key(default, meaning, range)``; a section is a dict of keys (or of plain
values: a plain value is a key with no range and no meaning, which is how a user policy's plain
`default_config()` reads). From such a tree come the plain defaults that `merge_config` merges
over (`defaults`), the meanings that `rlpipe config` prints (`flatten`) and the ranges that
`rlpipe.config_checks` enforces. A key without a range of its own takes the first shared rule
of `RULES` that its dotted name matches (``*lr`` is positive, ``*.gamma`` lies in [0, 1] ...),
so a new policy whose keys follow the usual names is range-checked without a line here.

`RUN_KEYS` declares the run sections of every run config (everything but `policy`) and
`PIPELINE_KEYS` the pipeline settings that every policy section carries (read by the middleware,
not the policy); a policy declares its own keys in its `config_keys()`.
"""
from __future__ import annotations

import copy
import fnmatch
import math
import numbers
from dataclasses import dataclass, replace
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from easydict import EasyDict

__all__ = ["Key", "PIPELINE_KEYS", "RULES", "RUN_KEYS", "Range", "count", "defaults", "extend",
           "flatten", "key", "non_negative", "positive", "rule_for", "unit"]


@dataclass(frozen=True)
class Range:
    """The values a key may take: a number (``integer`` for counts) between `low` and `high`,
    ends included unless `low_open`/`high_open`; `optional`: None (off/unset) is allowed too;
    `sizes`: the value is a list/tuple of numbers each in the range (layer widths)."""

    low: Optional[float] = None
    high: Optional[float] = None
    low_open: bool = False
    high_open: bool = False
    integer: bool = False
    optional: bool = False
    sizes: bool = False
    why: str = ""

    def describe(self) -> str:
        """The allowed range in words, e.g. ``an int >= 1`` or ``a number in (0, 1]``."""
        kind = "an int" if self.integer else "a finite number"
        if self.low is not None and self.high is not None:
            text = (f"{kind} in {'(' if self.low_open else '['}{_num(self.low)}, "
                    f"{_num(self.high)}{')' if self.high_open else ']'}")
        elif self.low is not None:
            text = f"{kind} {'>' if self.low_open else '>='} {_num(self.low)}"
        elif self.high is not None:
            text = f"{kind} {'<' if self.high_open else '<='} {_num(self.high)}"
        else:
            text = kind
        if self.sizes:
            text = f"a non-empty list of {text.replace('an int', 'ints', 1)}"
        if self.optional:
            text += ", or None"
        return text

    def accepts(self, value: Any) -> bool:
        """Whether `value` lies in this range."""
        if value is None:
            return self.optional
        if self.sizes:
            return (isinstance(value, (list, tuple)) and len(value) > 0
                    and all(self._accepts_number(v) for v in value))
        return self._accepts_number(value)

    def _accepts_number(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        if self.integer and not float(value).is_integer():
            return False
        if not math.isfinite(float(value)):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        if self.high is not None and (value >= self.high if self.high_open else value > self.high):
            return False
        return True


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


def count(low: int = 1, why: str = "", optional: bool = False) -> Range:
    """An int >= `low` (a size, count or frequency)."""
    return Range(low=low, integer=True, optional=optional, why=why)


def positive(why: str = "", optional: bool = False) -> Range:
    """A finite number > 0 (a rate, a time, a scale)."""
    return Range(low=0, low_open=True, optional=optional, why=why)


def non_negative(why: str = "", optional: bool = False) -> Range:
    """A finite number >= 0 (a weight or a noise level that may be off)."""
    return Range(low=0, optional=optional, why=why)


def unit(why: str = "", low_open: bool = False, optional: bool = False) -> Range:
    """A number in [0, 1] (or (0, 1] with `low_open`): a probability, a discount, a rate."""
    return Range(low=0, high=1, low_open=low_open, optional=optional, why=why)


@dataclass(frozen=True)
class Key:
    """One config key: its `default`, what it means and the values it may take (`range`; None:
    the shared rule its name matches in `RULES`, if any)."""

    default: Any
    meaning: str = ""
    range: Optional[Range] = None

    def over(self, base: "Key") -> "Key":
        """This key, with the meaning and range of `base` where it states none (a subclass that
        changes a default keeps what its parent's key means)."""
        return replace(self, meaning=self.meaning or base.meaning, range=self.range or base.range)


def key(default: Any, meaning: str = "", range: Optional[Range] = None) -> Key:
    """Declare a key: ``lr=key(1e-3, "Adam learning rate")``,
    ``n_envs=key(8, "parallel envs the collector steps", count(1, "collector envs"))``."""
    return Key(default, meaning, range)


def _as_key(value: Any) -> Key:
    return value if isinstance(value, Key) else Key(value)


def defaults(tree: Mapping[str, Any]) -> EasyDict:
    """The plain defaults of a tree of keys (a fresh copy each call): what `merge_config` merges
    a user's config over."""
    return EasyDict({name: _plain(value) for name, value in tree.items()})


def _plain(value: Any) -> Any:
    if isinstance(value, Key):
        return copy.deepcopy(value.default)
    if isinstance(value, Mapping):
        return {name: _plain(v) for name, v in value.items()}
    return copy.deepcopy(value)


def flatten(tree: Mapping[str, Any], prefix: str = "") -> Dict[str, Key]:
    """`{dotted name: Key}` for every key of a tree (a plain value becomes a Key without meaning
    or range; a dict is a section, unless it is a Key's default)."""
    out: Dict[str, Key] = {}
    for name, value in tree.items():
        dotted = f"{prefix}{name}"
        if isinstance(value, Mapping) and not isinstance(value, Key):
            out.update(flatten(value, dotted + "."))
        else:
            out[dotted] = _as_key(value)
    return out


def extend(base: Mapping[str, Any], extra: Mapping[str, Any]) -> Dict[str, Any]:
    """`base` with `extra`'s keys added or replaced, section by section; a replaced key keeps the
    meaning and range of the one it replaces unless it states its own."""
    merged: Dict[str, Any] = dict(base)
    for name, value in extra.items():
        old = merged.get(name)
        if isinstance(old, Key):  # a leaf, even where its default is a dict
            merged[name] = _as_key(value).over(old)
        elif isinstance(value, Mapping) and isinstance(old, Mapping):
            merged[name] = extend(old, value)
        else:
            merged[name] = value
    return merged


def rule_for(dotted: str, keys: Optional[Mapping[str, Key]] = None,
             rules: Optional[Sequence[Tuple[str, Range]]] = None) -> Optional[Range]:
    """The range of `dotted`: its own in `keys` when it declares one, else the first rule of
    `rules` (default `RULES`) whose pattern matches it, else None (not range-checked)."""
    own = (keys or {}).get(dotted)
    if own is not None and own.range is not None:
        return own.range
    for pattern, rule in RULES if rules is None else rules:
        if fnmatch.fnmatchcase(dotted, pattern):
            return rule
    return None


# Shared rules by name, for keys that declare no range: pattern (``fnmatch``: ``*`` spans dots)
# → range. The first pattern that matches wins, so specific names come before general ones.
RULES: Sequence[Tuple[str, Range]] = (
    ("policy.seed", count(0, "seeds network init and exploration", optional=True)),
    ("*.log_std_min", Range(why="lower bound of the log std")),
    ("*.log_std_max", Range(why="upper bound of the log std")),
    ("*.init_log_std", Range(why="initial log std")),
    ("*.target_entropy", Range(optional=True, why="entropy target")),
    ("*hidden", Range(low=1, integer=True, sizes=True, why="layer widths")),
    ("*.lr_decay_env_steps", count(1, "env steps of the lr decay", optional=True)),
    ("*.actor_lr_cosine_steps", count(1, "learn steps of the cosine lr decay", optional=True)),
    ("*lr", positive("learning rate")),
    ("*.batch_size", count(1, "rows per update")),
    ("*.gamma", unit("discount")),
    ("*.gae_lambda", unit("GAE lambda")),
    ("*.tau", unit("Polyak rate", low_open=True, optional=True)),
    ("*.nstep", count(1, "steps of the n-step return")),
    ("*_freq", count(1, "a frequency in steps")),
    ("*.epoch_per_collect", count(1, "passes over each rollout")),
    ("*.policy_delay", count(1, "critic updates per actor update")),
    ("*.grad_clip", positive("max gradient norm", optional=True)),
    ("*.clip_ratio", positive("PPO clip epsilon")),
    ("*.value_clip", positive("value clip range", optional=True)),
    ("*_coef", non_negative("loss weight")),
    ("*.reward_scale", positive("reward scale")),
    ("*.target_kl", positive("approx-KL early stop", optional=True)),
    ("*.init_alpha", positive("entropy temperature")),
    ("*.cql_alpha", non_negative("weight of CQL's conservative term")),
    ("*.cql_n_actions", count(1, "actions CQL samples per state from each sampler")),
    ("*.bc_steps", count(0, "learn steps of behaviour cloning first")),
    ("*.cql_temperature", positive("temperature of CQL's logsumexp")),
    ("*.lagrange_threshold", Range(optional=True, why="the conservative gap CQL's Lagrange "
                                                      "multiplier aims for")),
    ("*.init_alpha_prime", Range(low=0, high=1e6, low_open=True,
                                 why="initial Lagrange multiplier")),
    ("*noise*", non_negative("noise std")),
    # offline RL (IQL, TD3+BC)
    ("*.expectile", Range(low=0, high=1, low_open=True, high_open=True,
                          why="expectile of the value regression")),
    ("*.beta", non_negative("inverse temperature of the advantage weights")),
    ("*.max_weight", positive("clip of the advantage weights")),
    ("*.alpha", non_negative("weight of the Q term against behaviour cloning")),
)


# The run sections of a run config (everything but `policy`), dotted, in the order `rlpipe config`
# prints them; which of them a pipeline takes, and the defaults it changes, is the pipelines'
# table (`rlpipe.pipelines.run_keys.PIPELINE_RUNS`).
RUN_KEYS: Dict[str, Key] = {
    "seed": key(0, "seed of the run: envs, network init, exploration, replay sampling",
                count(0, "the run's seed")),
    "run_dir": key(None, "the run folder (set by `rlpipe train`: runs/<name>/<timestamp>/)"),
    "async_mode": key(False, "overlap collection and evaluation with training (`--async`)"),
    "max_env_step": key(100_000, "stop after this many env steps (`--max-env-steps`)",
                        count(1, "the run's budget of env steps")),
    "max_train_iter": key(None, "stop after this many learn steps (None: no limit; offline: the "
                          "budget)",
                          count(1, "the run's budget of train iterations", optional=True)),
    "max_wall_time": key(None, "stop after this many seconds (None: no limit)",
                         positive("the run's budget in seconds", optional=True)),
    "progress": key(True, "show a progress bar (`--no-progress` turns it off)"),
    "resume_from": key(None, "checkpoint this run continues from (set by `--resume`)"),
    "init_from": key(None, "checkpoint whose weights this new run starts from (set by `--init-from "
                     "RUN_DIR`: its best.pt, else final.pt)"),
    "init_from_optim": key(False, "with init_from: load the optimiser states too "
                           "(`--init-from-optim`); else they start fresh"),
    "dataset.id": key(None, "the Minari data set an offline run trains on (`--dataset ID`; `rlpipe "
                      "dataset list` shows the local ones)"),
    "env.id": key(None, "gymnasium id, name registered with rlpipe.envs.register_env, or "
                  "module:Factory (offline: the eval env; None: the data set's)"),
    "env.n_envs": key(8, "parallel envs the collector steps", count(1, "collector envs")),
    "env.eval_n_envs": key(5, "parallel envs the evaluator steps", count(1, "evaluator envs")),
    "env.mode": key("auto", "vectorisation: 'sync', 'async' (subprocesses), 'native' or 'auto'"),
    "env.stop_value": key(None, "finish when the mean eval return reaches this (None: run the "
                          "budget)"),
    "env.step_timeout": key(None, "seconds an env step may take before the env is restarted (async "
                            "mode)",
                            positive("seconds a step may take", optional=True)),
    "env.env_kwargs": key({}, "keyword arguments for gymnasium.make (or the env factory)"),
    "env.eval_env_kwargs": key({}, "the evaluator's env kwargs, over env_kwargs (Atari: "
                               "{'atari_preset': 'eval'})"),
    # Counted per env manager: an env that crashes now and then runs on; a crash loop stops.
    "env.max_restarts": key(10, "env restarts (crashes, hangs) allowed within restart_window "
                            "steps; one more stops the run, naming the env and its last traceback",
                            count(0, "env restarts allowed within env.restart_window")),
    "env.restart_window": key(1000, "batched env steps over which max_restarts counts (None: the "
                              "whole run)",
                              count(1, "env steps over which restarts are counted", optional=True)),
    "env.action_masks": key(True, "hand the env's action masks to the policy (False: ignore them)"),
    "env.action_mask_fn": key(None, "'module:function' giving the action mask from (obs, infos); "
                              "None: the env's info['action_mask'] or obs key 'action_mask'"),
    "replay.capacity": key(100_000, "transitions the replay buffer holds",
                           count(1, "transitions the buffer holds")),
    "replay.prioritized": key(False, "prioritised replay (sum tree) instead of uniform sampling"),
    "replay.alpha": key(0.6, "prioritised replay: priority exponent",
                        non_negative("priority exponent")),
    "replay.beta": key(0.4, "prioritised replay: importance-sampling exponent",
                       unit("importance-sampling exponent")),
    "replay.min_samples": key(1000, "transitions in the buffer before learning starts",
                              count(0, "transitions stored before learning starts")),
    "replay.max_updates_per_step": key(None, "learn steps allowed per collected env step (None: "
                                       "update_per_collect / n_sample)",
                                       positive("updates per collected env step", optional=True)),
    "replay.save_buffer": key(True, "checkpoints save the replay buffer, so --resume is exact"),
    "replay.frames": key(None, "store each frame of uint8 frame-stack observations once (True), "
                         "never (False), or None: when the env's observations are such stacks"),
    "replay.frame_stack": key(4, "frames per observation, for replay.frames (the axis of this "
                              "size, first or last, is the frame axis)",
                              count(1, "frames per stacked observation")),
    "logger.tensorboard": key(True, "write TensorBoard events to <run_dir>/tb"),
    "logger.wandb": key(False, "also log the metrics and config to Weights & Biases, files under "
                        "<run_dir>/wandb (rlpipe[wandb]; WANDB_MODE=offline: no network)"),
    "logger.wandb_project": key("rlpipe", "the W&B project of logger.wandb"),
    "logger.wandb_mode": key(None, "W&B's mode: 'online', 'offline' (files only, `wandb sync` "
                             "uploads them later) or None (WANDB_MODE decides, else online)"),
    "logger.train_show_freq": key(100, "log the learner's statistics (averaged) every this many "
                                  "train iterations"),
    "ckpt.train_freq": key(5000, "write a resumable checkpoint every this many learn steps",
                           count(1, "train iterations between checkpoints")),
    # Distributed runs: `rlpipe train --collectors N` (docs/distributed.md).
    "parallel.collectors": key(0, "collector processes of a distributed run (`--collectors`)",
                               count(0, "collector processes")),
    "parallel.evaluator": key(False, "evaluate in a process of its own (`--evaluator`)"),
    "parallel.publish_every": key(None, "learner publishes weights every N learn steps (None: "
                                  "every one)",
                                  count(1, "train iterations between weight publications",
                                        optional=True)),
    "parallel.batches_per_iter": key(1, "collector batches the learner takes per iteration",
                                     count(1, "trajectory batches per learner iteration")),
    "parallel.queue_size": key(None, "collector batches in flight before collectors wait (None: "
                               "default)",
                               count(1, "queued trajectory batches", optional=True)),
    "parallel.backend": key("ray", "'ray' (actors, one machine or a cluster) or 'local' (child "
                            "processes)"),
    "parallel.resources": key(None, "Ray: processes placed on nodes by custom resource, e.g. "
                              "{'collector 1': 'worker_node'} (None: wherever Ray has room)"),
    "parallel.child_nice": key(None, "CPU priority offset of the local backend's children (None: "
                               "10; 0 for a real-time collector that must keep its clock)",
                               count(0, "CPU priority offset of local child processes",
                                     optional=True)),
}


# The pipeline settings that every policy section carries, as in DI-engine (read by the
# middleware, not the policy); a policy may change their defaults in its own keys.
PIPELINE_KEYS: Dict[str, Any] = dict(
    collect=dict(
        n_sample=key(256, "env steps collected per iteration (summed over envs)",
                     count(1, "env steps collected per iteration")),
        n_episode=key(8, "episodes collected per iteration (episode collectors)",
                      count(1, "episodes collected per iteration")),
        random_collect_size=key(0, "first env steps taken with uniformly random actions",
                                count(0, "random warm-up env steps")),
    ),
    other=dict(eps=dict(
        type=key("linear", "epsilon schedule of eps-greedy exploration ('linear' or 'exp')"),
        start=key(1.0, "epsilon at the start", unit("exploration probability")),
        end=key(0.05, "epsilon at the end of the decay", unit("exploration probability")),
        decay=key(10_000, "env steps over which epsilon decays",
                  count(1, "env steps of the epsilon decay")),
        per_env_step=key(False, "recompute epsilon before every env step (SB3's way) instead of "
                                "once per iteration"),
    )),
    learn=dict(
        update_per_collect=key(1, "learn steps per iteration", count(1, "updates per iteration")),
    ),
    eval=dict(evaluator=dict(
        eval_freq=key(1000, "evaluate every this many train iterations (learn steps)",
                      count(1, "train iterations between evaluations")),
        n_episode=key(10, "episodes per evaluation", count(1, "episodes per evaluation")),
    )),
)
