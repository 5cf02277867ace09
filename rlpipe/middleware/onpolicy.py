"""On-policy middleware: `gae_estimator` turns a collected rollout into a training batch with
GAE advantages, `multistep_trainer` hands it to the policy for its epochs of minibatch updates.

    task.use(StepCollector(cfg, policy.collect_mode, collector_env))
    task.use(gae_estimator(cfg, policy.collect_mode))
    task.use(multistep_trainer(cfg, policy.learn_mode))
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from rlpipe.contexts import OnlineRLContext
from rlpipe.data import compute_gae
from rlpipe.engine import contract

from ._cfg import setting
from .learner import check_finite

log = logging.getLogger(__name__)
ValueFn = Callable[[Any], Any]
_DROPPED = ("next_obs", "valid")  # used for the estimate, not carried into the batch


def _stack(values: List[Any]) -> Any:
    """Per-step values [N, ...] (or nested dicts of them) → one array [T, N, ...] (or tree)."""
    if isinstance(values[0], dict):
        return {k: _stack([v[k] for v in values]) for k in values[0]}
    return np.stack([np.asarray(v) for v in values])


def _map(tree: Any, fn: Callable[[np.ndarray], np.ndarray]) -> Any:
    return {k: _map(v, fn) for k, v in tree.items()} if isinstance(tree, dict) else fn(tree)


def _values_of(value_fn: Optional[ValueFn], obs: Any, n: int, why: str) -> np.ndarray:
    if value_fn is None:
        raise ValueError(
            f"gae_estimator needs V(obs) {why}, but the policy it was given has no value(obs) "
            "method: pass a PPO collect face (gae_estimator(cfg, policy.collect_mode)) or any "
            "object with value(obs batch) -> values.")
    got = np.asarray(value_fn(obs), dtype=np.float32).reshape(-1)
    if got.shape[0] != n:
        raise ValueError(f"gae_estimator: value(obs) returned {got.shape[0]} values for {n} "
                         "observations; it must return one value per row.")
    return got


def rollout_to_batch(steps: List[Dict[str, Any]], gamma: float, lam: float,
                     value_fn: Optional[ValueFn] = None,
                     reward_scale: float = 1.0) -> Dict[str, Any]:
    """GAE over a rollout of per-step dicts (each over N envs, as StepCollector writes them).

    Returns the valid rows flattened step-major (row = t·N + env) with every per-step key except
    next_obs and valid, plus "adv" and "return" (float32). The value of a step's next
    observation is the next step's "value" while the episode goes on; for a truncated step and
    for the last step of the rollout it is `value_fn(next_obs)` (the true final observation
    at an episode end), all in one batched call; a terminated step does not bootstrap.
    Steps without "value" get `value_fn(obs)`. Rewards are multiplied by `reward_scale` before
    the estimate (the batch's "reward" too), so values and returns are in scaled units.
    """
    keys = set(steps[0])
    for t, step in enumerate(steps):
        if set(step) != keys:
            raise KeyError(f"gae_estimator: step {t} has keys {sorted(step)}, step 0 has "
                           f"{sorted(keys)}; every step needs the same keys (random warm-up "
                           "steps carry no policy outputs: set policy.collect.random_collect_size=0).")
    arrays = {k: _stack([s[k] for s in steps]) for k in steps[0]}
    for key in ("obs", "reward", "terminated", "truncated", "next_obs"):
        if key not in arrays:
            raise KeyError(f"gae_estimator: the collected steps lack {key!r} (they have "
                           f"{sorted(arrays)}); collect them with StepCollector.")
    reward = arrays["reward"] = arrays["reward"].astype(np.float32) * np.float32(reward_scale)
    T, N = reward.shape[:2]
    term = arrays["terminated"].astype(bool)
    trunc = arrays["truncated"].astype(bool)
    valid = arrays["valid"].astype(bool) if "valid" in arrays else np.ones((T, N), bool)
    flat = lambda a: a.reshape((T * N,) + a.shape[2:])  # noqa: E731
    if "value" not in arrays:
        arrays["value"] = _values_of(value_fn, _map(arrays["obs"], flat), T * N,
                                     "of the observations (the steps carry no 'value')"
                                     ).reshape(T, N)
    values = arrays["value"].astype(np.float32).reshape(T, N)

    next_values = np.zeros((T, N), np.float32)
    next_values[:-1] = values[1:]  # obs[t + 1] is next_obs[t] while the episode goes on
    need = valid & ~term & trunc
    need[-1] = valid[-1] & ~term[-1]
    if need.any():
        t_idx, e_idx = np.nonzero(need)
        obs = _map(arrays["next_obs"], lambda a: a[t_idx, e_idx])
        next_values[t_idx, e_idx] = _values_of(
            value_fn, obs, t_idx.shape[0], "of the next observation of truncated and last steps")
    adv, ret = compute_gae(reward, values, next_values, term, trunc, gamma, lam, valid=valid)

    rows = np.flatnonzero(valid.reshape(-1))
    keep = lambda a: flat(a)[rows]  # noqa: E731
    batch = {k: _map(v, keep) for k, v in arrays.items() if k not in _DROPPED}
    batch["adv"] = keep(adv)
    batch["return"] = keep(ret)
    return batch


def gae_estimator(cfg: Any, policy: Any) -> Callable:
    """`ctx.trajectories` → `ctx.train_data`: the rollout's valid rows with "adv" and "return".

    GAE(γ = `cfg.policy.learn.gamma`, λ = `cfg.policy.learn.gae_lambda`) over the rewards times
    `cfg.policy.learn.reward_scale` (1 when the config has none); `policy` is a collect
    face with `value(obs)` (PPO's `policy.collect_mode`), used to bootstrap truncated episodes
    (from the true final observation) and the rollout's last step. See `rollout_to_batch`.
    """
    gamma = float(setting(cfg, "policy.learn.gamma"))
    lam = float(setting(cfg, "policy.learn.gae_lambda"))
    reward_scale = float(setting(cfg, "policy.learn.reward_scale", 1.0))
    value_fn = getattr(policy, "value", None)

    @contract(reads=("trajectories",), writes=("train_data",))
    def _gae_estimator(ctx: OnlineRLContext) -> None:
        steps = ctx.trajectories
        ctx.train_data = rollout_to_batch(steps, gamma, lam, value_fn, reward_scale) if steps else None

    return _gae_estimator


def multistep_trainer(cfg: Any, policy: Any = None, log_freq: Optional[int] = None) -> Callable:
    """Hand `ctx.train_data` (a whole rollout) to `policy.forward` (a learn face that runs its
    own epochs of minibatch updates); `ctx.train_output` = its mean statistics; `train_iter`
    advances by the number of gradient steps it reports as "n_updates" (1 if it reports none).
    A NaN or infinite statistic raises `NonFiniteLossError`. Skipped when train_data is None.

    Current DI-engine's form `multistep_trainer(policy, log_freq=100)` is accepted too (the
    config is not needed). `log_freq`: log the statistics at INFO level each time `train_iter`
    crosses a multiple of it (None: never; the run's logger records them anyway)."""
    if policy is None:  # multistep_trainer(policy, log_freq=...)
        cfg, policy = None, cfg
    if not callable(getattr(policy, "forward", None)):
        raise TypeError(f"multistep_trainer: the policy must be a learn face with forward(batch), "
                        f"got a {type(policy).__name__}; call multistep_trainer(cfg, "
                        f"policy.learn_mode) or multistep_trainer(policy.learn_mode, log_freq=...)")
    if log_freq is not None and (isinstance(log_freq, bool) or not isinstance(log_freq, int)
                                 or log_freq < 1):
        raise ValueError(f"multistep_trainer(log_freq={log_freq!r}): must be an int >= 1 "
                         f"(log every that many train iterations) or None")

    @contract(reads=("train_data", "train_iter"), writes=("train_output", "train_iter"))
    def _multistep_trainer(ctx: OnlineRLContext) -> None:
        if ctx.train_data is None:
            return
        output = policy.forward(ctx.train_data)
        check_finite(output, "multistep_trainer", ctx.train_iter)
        ctx.train_output = output
        before = ctx.train_iter
        ctx.train_iter += int(output.get("n_updates", 1))
        if log_freq is not None and ctx.train_iter // log_freq > before // log_freq:
            stats = ", ".join(f"{k} {v:.4g}" for k, v in output.items()
                              if isinstance(v, (int, float, np.floating)) and k != "n_updates")
            log.info("multistep_trainer: train_iter %d: %s", ctx.train_iter, stats)

    return _multistep_trainer


__all__ = ["gae_estimator", "multistep_trainer", "rollout_to_batch"]
