"""Range checks for resolved configs: values that cannot work are refused before a run starts.

`merge_config` checks that a key exists and has the right type; this module checks that its
*value* can work (``policy.collect.n_sample=0`` would divide by zero, ``gamma=1.5`` diverges,
``lr=nan`` poisons the first update). The allowed ranges live in one table, `RANGES`, whose
patterns are matched against each dotted key (``fnmatch``: ``*`` spans dots, so
``*.batch_size`` covers every section's batch size). A new policy whose keys follow the usual
names (``lr``, ``*_lr``, ``gamma``, ``tau``, ``batch_size``, ``*_freq`` …) is checked without a
new line here; add a line for a key with a new name.

`check_config(cfg)` raises a `ConfigRangeError` (a `ConfigError`, so a `ValueError`) whose
message is one line naming the key, its value and the allowed range.
"""
from __future__ import annotations

import fnmatch
import math
import numbers
from dataclasses import dataclass
from typing import Any, Iterator, List, Mapping, Optional, Sequence, Tuple

from rlpipe.config import ConfigError

__all__ = ["ConfigRangeError", "RANGES", "Range", "budget_warnings", "check_config", "rule_for"]


class ConfigRangeError(ConfigError):
    """A config value of the right type that lies outside the range that can work."""


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


# Pattern → allowed range. The first pattern that matches a key wins, so specific keys come
# before the general names below them. Keys that match nothing are not range-checked.
RANGES: Sequence[Tuple[str, Range]] = (
    # the run
    ("seed", count(0, "the run's seed")),
    ("policy.seed", count(0, "seeds network init and exploration", optional=True)),
    ("max_env_step", count(1, "the run's budget of env steps")),
    ("max_train_iter", count(1, "the run's budget of train iterations", optional=True)),
    ("max_wall_time", positive("the run's budget in seconds", optional=True)),
    # env
    ("env.n_envs", count(1, "collector envs")),
    ("env.eval_n_envs", count(1, "evaluator envs")),
    ("env.step_timeout", positive("seconds a step may take", optional=True)),
    ("env.max_restarts", count(0, "env restarts allowed within env.restart_window")),
    ("env.restart_window", count(1, "env steps over which restarts are counted",
                                 optional=True)),
    # replay, checkpoints, distributed
    ("replay.capacity", count(1, "transitions the buffer holds")),
    ("replay.min_samples", count(0, "transitions stored before learning starts")),
    ("replay.alpha", non_negative("priority exponent")),
    ("replay.beta", unit("importance-sampling exponent")),
    ("replay.frame_stack", count(1, "frames per stacked observation")),
    ("replay.max_updates_per_step", positive("updates per collected env step",
                                             optional=True)),
    ("ckpt.train_freq", count(1, "train iterations between checkpoints")),
    ("parallel.collectors", count(0, "collector processes")),
    ("parallel.publish_every", count(1, "train iterations between weight publications",
                                     optional=True)),
    ("parallel.batches_per_iter", count(1, "trajectory batches per learner iteration")),
    ("parallel.queue_size", count(1, "queued trajectory batches", optional=True)),
    ("parallel.child_nice", count(0, "CPU priority offset of local child processes",
                                  optional=True)),
    # the pipeline settings of every policy section
    ("policy.collect.n_sample", count(1, "env steps collected per iteration")),
    ("policy.collect.n_episode", count(1, "episodes collected per iteration")),
    ("policy.collect.random_collect_size", count(0, "random warm-up env steps")),
    ("policy.other.eps.start", unit("exploration probability")),
    ("policy.other.eps.end", unit("exploration probability")),
    ("policy.other.eps.decay", count(1, "env steps of the epsilon decay")),
    ("policy.learn.update_per_collect", count(1, "updates per iteration")),
    ("policy.eval.evaluator.eval_freq", count(1, "train iterations between evaluations")),
    ("policy.eval.evaluator.n_episode", count(1, "episodes per evaluation")),
    # policy hyper-parameters, by their usual names
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


def _leaves(cfg: Mapping, path: str = "") -> Iterator[Tuple[str, Any]]:
    for key, value in cfg.items():
        full = f"{path}.{key}" if path else str(key)
        if isinstance(value, Mapping):
            yield from _leaves(value, full)
        else:
            yield full, value


def rule_for(key: str, table: Sequence[Tuple[str, Range]] = RANGES) -> Optional[Range]:
    """The range of dotted `key` (the first pattern of `table` that matches), or None."""
    for pattern, rule in table:
        if fnmatch.fnmatchcase(key, pattern):
            return rule
    return None


def check_config(cfg: Mapping, table: Sequence[Tuple[str, Range]] = RANGES) -> Mapping:
    """Raise `ConfigRangeError` for the first key of `cfg` whose value lies outside its range in
    `table`; return `cfg` unchanged otherwise (so calls chain)."""
    for key, value in _leaves(cfg):
        rule = rule_for(key, table)
        if rule is None or rule.accepts(value):
            continue
        why = f" ({rule.why})" if rule.why else ""
        raise ConfigRangeError(
            f"config key {key!r} is {value!r}, which cannot work: it must be "
            f"{rule.describe()}{why}. Set it with --set {key}=VALUE or in the entry's config.",
            key=key)
    _check_pairs(cfg)
    return cfg


def _check_pairs(cfg: Mapping) -> None:
    """The few limits that relate two keys."""
    model = (cfg.get("policy") or {}).get("model") or {}
    low, high = model.get("log_std_min"), model.get("log_std_max")
    if isinstance(low, numbers.Real) and isinstance(high, numbers.Real) and not low < high:
        raise ConfigRangeError(
            f"config keys 'policy.model.log_std_min' ({low!r}) and 'policy.model.log_std_max' "
            f"({high!r}): the minimum must be below the maximum; fix one of them with --set.",
            key="policy.model.log_std_min")
    replay = cfg.get("replay") or {}
    need, room = replay.get("min_samples"), replay.get("capacity")
    if isinstance(need, numbers.Integral) and isinstance(room, numbers.Integral) and need > room:
        raise ConfigRangeError(
            f"config keys 'replay.min_samples' ({need}) and 'replay.capacity' ({room}): learning "
            f"waits for more transitions than the buffer holds, so it never starts; lower "
            f"replay.min_samples or raise replay.capacity with --set.", key="replay.min_samples")
    _check_collection(cfg)


def _ints(*values: Any) -> bool:
    return all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values)


def _check_collection(cfg: Mapping) -> None:
    """Settings of an online run whose pipeline could never do what they say: a replay buffer
    smaller than one batch, fewer env steps per iteration than there are envs, a PPO minibatch
    larger than the rollout it is cut from. (An offline run's keys are its data set's.)"""
    policy = cfg.get("policy") or {}
    learn, collect = policy.get("learn") or {}, policy.get("collect") or {}
    if cfg.get("dataset") or not (cfg.get("env") or {}).get("id"):
        return
    batch, room = learn.get("batch_size"), (cfg.get("replay") or {}).get("capacity")
    if _ints(batch, room) and room < batch:
        raise ConfigRangeError(
            f"config keys 'replay.capacity' ({room}) and 'policy.learn.batch_size' ({batch}): the "
            f"buffer never holds one batch, so no update would run; raise replay.capacity or "
            f"lower policy.learn.batch_size with --set.", key="replay.capacity")
    n_sample, n_envs = collect.get("n_sample"), (cfg.get("env") or {}).get("n_envs")
    if _ints(n_sample, n_envs) and n_sample < n_envs:
        raise ConfigRangeError(
            f"config keys 'policy.collect.n_sample' ({n_sample}) and 'env.n_envs' ({n_envs}): an "
            f"iteration steps every env at least once, so it would collect {n_envs} env steps, "
            f"not {n_sample}; set policy.collect.n_sample >= env.n_envs, or fewer envs, with --set.",
            key="policy.collect.n_sample")
    on_policy = "replay" not in cfg and "epoch_per_collect" in learn
    if on_policy and "chunk_len" not in learn and _ints(batch, n_sample) and batch > n_sample:
        raise ConfigRangeError(
            f"config keys 'policy.learn.batch_size' ({batch}) and 'policy.collect.n_sample' "
            f"({n_sample}): a minibatch is cut from one rollout of n_sample env steps, so it "
            f"cannot be larger; lower policy.learn.batch_size or raise policy.collect.n_sample "
            f"with --set.", key="policy.learn.batch_size")


def budget_warnings(cfg: Mapping) -> List[str]:
    """One line for each way an online off-policy run's budget leaves it (nearly) untrained:
    it ends before the warm-up, or its update ratio gives no update in the whole budget. A
    smoke run may want exactly that, so these are warnings, not errors."""
    replay = cfg.get("replay")
    policy = cfg.get("policy") or {}
    learn, collect = policy.get("learn") or {}, policy.get("collect") or {}
    budget = cfg.get("max_env_step")
    if cfg.get("dataset") or not replay or not _ints(budget):
        return []
    warm = max(int(replay.get("min_samples") or 0), int(learn.get("batch_size") or 1))
    if budget <= warm:
        return [f"max_env_step={budget} ends before learning starts (replay.min_samples="
                f"{replay.get('min_samples')}, policy.learn.batch_size={learn.get('batch_size')}: "
                f"updates begin after {warm} transitions): this run makes no update; raise the "
                f"budget or lower replay.min_samples"]
    per_iter, n_sample = learn.get("update_per_collect"), collect.get("n_sample")
    ratio = replay.get("max_updates_per_step")
    if ratio is None and _ints(per_iter, n_sample) and n_sample > 0:
        ratio = per_iter / n_sample
    if isinstance(ratio, numbers.Real) and (budget - warm) * ratio < 1:
        return [f"max_env_step={budget} with {ratio:g} updates per env step (policy.learn."
                f"update_per_collect / policy.collect.n_sample, or replay.max_updates_per_step) "
                f"after {warm} warm-up transitions gives no update in the whole budget; raise "
                f"the budget or the update ratio"]
    return []
