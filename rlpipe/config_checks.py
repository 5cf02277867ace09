"""Range checks for resolved configs: values that cannot work are refused before a run starts.

`merge_config` checks that a key exists and has the right type; this module checks that its
*value* can work (``policy.collect.n_sample=0`` would divide by zero, ``gamma=1.5`` diverges,
``lr=nan`` poisons the first update). The ranges are those of the config schema
(`rlpipe.schema`): the range a key declares beside its default and meaning, else the shared
rule its name matches. `RANGES` lists them as (pattern, range): the declared run and pipeline
keys first, then the shared rules; a policy's own declared ranges apply when its keys are passed
(`check_config(cfg, keys=...)`, as the pipelines do).

`check_config(cfg)` raises a `ConfigRangeError` (a `ConfigError`, so a `ValueError`) whose
message is one line naming the key, its value and the allowed range.
"""
from __future__ import annotations

import numbers
from typing import Any, Iterator, List, Mapping, Optional, Sequence, Tuple

from rlpipe.config import ConfigError
from rlpipe.schema import PIPELINE_KEYS, RULES, RUN_KEYS, Key, Range, flatten
from rlpipe.schema import rule_for as _schema_rule

__all__ = ["ConfigRangeError", "RANGES", "Range", "budget_warnings", "check_config", "rule_for"]


class ConfigRangeError(ConfigError):
    """A config value of the right type that lies outside the range that can work."""


def _declared_ranges() -> Tuple[Tuple[str, Range], ...]:
    declared = {**RUN_KEYS, **flatten(PIPELINE_KEYS, "policy.")}
    return tuple((name, k.range) for name, k in declared.items() if k.range is not None)


# Pattern → allowed range. The first pattern that matches a key wins: the exact keys of the run
# and pipeline sections, then the shared rules by name. Keys that match nothing are not checked.
RANGES: Sequence[Tuple[str, Range]] = _declared_ranges() + tuple(RULES)


def _leaves(cfg: Mapping, path: str = "") -> Iterator[Tuple[str, Any]]:
    for key, value in cfg.items():
        full = f"{path}.{key}" if path else str(key)
        if isinstance(value, Mapping):
            yield from _leaves(value, full)
        else:
            yield full, value


def rule_for(key: str, table: Sequence[Tuple[str, Range]] = RANGES,
             keys: Optional[Mapping[str, Key]] = None) -> Optional[Range]:
    """The range of dotted `key`: the one it declares in `keys` (dotted name → `Key`, e.g. a
    policy's `declared_keys("policy.")`), else the first pattern of `table` that matches, else
    None."""
    return _schema_rule(key, keys, table)


def check_config(cfg: Mapping, table: Sequence[Tuple[str, Range]] = RANGES,
                 keys: Optional[Mapping[str, Key]] = None) -> Mapping:
    """Raise `ConfigRangeError` for the first key of `cfg` whose value lies outside its range
    (`rule_for`); return `cfg` unchanged otherwise (so calls chain)."""
    for key, value in _leaves(cfg):
        rule = rule_for(key, table, keys)
        if rule is None or rule.accepts(value):
            continue
        why = f" ({rule.why})" if rule.why else ""
        raise ConfigRangeError(
            f"config key {key!r} is {value!r}, which cannot work: it must be "
            f"{rule.describe()}{why}. Set it with --set {key}=VALUE or in the entry's config.",
            key=key)
    _check_pairs(cfg)
    _check_parallel(cfg)
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


def _check_parallel(cfg: Mapping) -> None:
    """A distributed run's launcher, and Ray where it launches collectors."""
    par = cfg.get("parallel") or {}
    backend = par.get("backend", "ray")
    if backend not in ("ray", "local"):
        raise ConfigRangeError(
            f"config key 'parallel.backend' is {backend!r}: it must be 'ray' (actors, one machine "
            f"or a cluster) or 'local' (child processes of this machine); set it with --backend.",
            key="parallel.backend")
    if backend == "ray" and _ints(par.get("collectors")) and par["collectors"] > 0:
        from rlpipe.engine.parallel import require_ray  # names the pip command

        require_ray()


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
