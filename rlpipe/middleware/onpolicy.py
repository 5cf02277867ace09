"""On-policy middleware: `gae_estimator` turns a collected rollout into a training batch with
GAE advantages (built by the data layer's `RolloutStorage`, the one home of GAE batches),
`multistep_trainer` (the one `trainer` under DI-engine's on-policy name) hands it to the policy
for its epochs of minibatch updates.

    task.use(StepCollector(cfg, policy.collect_mode, collector_env))
    task.use(gae_estimator(cfg, policy.collect_mode))
    task.use(multistep_trainer(cfg, policy.learn_mode))
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import numpy as np

from rlpipe.contexts import OnlineRLContext
from rlpipe.data import RolloutStorage
from rlpipe.engine import Role, contract

from ._cfg import setting
from ._hidden import is_recurrent
from .learner import trainer

ValueFn = Callable[[Any], Any]


def _no_value(obs: Any) -> Any:
    raise ValueError(
        "gae_estimator needs V(obs) (for the steps without 'value', truncated steps and the "
        "rollout's last step), but the policy it was given has no value(obs) method: pass a PPO "
        "collect face (gae_estimator(cfg, policy.collect_mode)) or any object with "
        "value(obs batch) -> values.")


def rollout_to_batch(steps: List[Dict[str, Any]], gamma: float, lam: float,
                     value_fn: Optional[ValueFn] = None,
                     reward_scale: float = 1.0) -> Dict[str, Any]:
    """GAE over a rollout of per-step dicts (each over N envs, as StepCollector writes them),
    built by `RolloutStorage` (data layer): `from_steps`, `compute`, `batch`.

    Returns the valid rows flattened step-major (row = t·N + env) with every per-step key except
    next_obs and valid, plus "adv" and "return" (float32). The value of a step's next
    observation is the next step's "value" while the episode goes on; for a truncated step and
    for the last step of the rollout it is `value_fn(next_obs)` (the true final observation
    at an episode end), all in one batched call; a terminated step does not bootstrap.
    Steps without "value" get `value_fn(obs)`. Multi-agent steps ([N, A] rewards, with
    agent_mask and global_state) get GAE per (env, agent) row, `value_fn(obs, global_state=,
    agent_mask=)` returning [rows, A] (RolloutStorage); keys whose value is None (an env without
    a global state) are left out. Rewards are multiplied by `reward_scale` before
    the estimate (the batch's "reward" too), so values and returns are in scaled units.
    """
    if any(v is None for v in steps[0].values()):  # e.g. global_state of an env without one
        steps = [{k: v for k, v in step.items() if v is not None} for step in steps]
    try:
        store = RolloutStorage.from_steps(steps, reward_scale)
    except KeyError as err:
        raise KeyError(f"gae_estimator: {err.args[0]} (if the rollout begins with random warm-up "
                       "steps, which carry no policy outputs: set "
                       "policy.collect.random_collect_size=0)") from err
    store.compute(gamma, lam, value_fn if value_fn is not None else _no_value)
    batch = store.batch()
    batch["adv"] = batch.pop("advantage")
    batch["return"] = batch.pop("return")
    return batch


def recurrent_rollout(steps: List[Dict[str, Any]], gamma: float, lam: float,
                      next_values: Callable[[Dict[str, Any]], Any],
                      reward_scale: float = 1.0,
                      rollout_values: Optional[Callable[[Dict[str, Any]], Any]] = None
                      ) -> Dict[str, Any]:
    """GAE for a recurrent policy, the rollout kept in time order: ``{"rollout": store}``, a
    computed `RolloutStorage` that the policy cuts into sequence minibatches. The value of each
    step's next observation is `next_values(rollout) -> [T, N]` (V from the state the episode
    carried after that step; the policy's collect face has it), so no V(obs) without state is
    ever asked for. `rollout_values(rollout) -> [T, N]` (optional): the steps' values from
    the same critic, replacing the recorded ones (which an older collector's critic gave)."""
    store = RolloutStorage.from_steps(steps, reward_scale)
    shape = (len(steps), store.n_envs)
    values = np.asarray(next_values(store.data), dtype=np.float32)
    if values.shape != shape:
        raise ValueError(f"gae_estimator: next_values returned shape {values.shape}, expected "
                         f"[T, N] = {shape}")
    now = (np.asarray(rollout_values(store.data), dtype=np.float32)
           if rollout_values is not None else None)
    if now is not None and now.shape != shape:
        raise ValueError(f"gae_estimator: rollout_values returned shape {now.shape}, expected "
                         f"[T, N] = {shape}")
    store = RolloutStorage.from_steps(
        [dict(step, next_value=v, **({} if now is None else {"value": now[t]}))
         for t, (step, v) in enumerate(zip(steps, values))], reward_scale)
    store.compute(gamma, lam)
    return {"rollout": store}


def gae_estimator(cfg: Any, policy: Any, buffer_: Any = None) -> Callable:
    """`ctx.trajectories` → `ctx.train_data`: the rollout's valid rows with "adv" and "return".

    DI-engine's form `gae_estimator(cfg, policy, buffer_)` pushes those rows into `buffer_`
    instead (an off-policy learner samples them from there) and leaves `ctx.train_data` None.

    GAE(γ = `cfg.policy.learn.gamma`, λ = `cfg.policy.learn.gae_lambda`) over the rewards times
    `cfg.policy.learn.reward_scale` (1 when the config has none); `policy` is a collect
    face with `value(obs)` (PPO's `policy.collect_mode`), used to bootstrap truncated episodes
    (from the true final observation) and the rollout's last step. See `rollout_to_batch`.
    A recurrent policy (LSTM-PPO) gets `recurrent_rollout`'s time-ordered ``{"rollout": ...}``.

    Bootstrap values come from the face's acting copy, which it first `refresh()`es from the
    learner's network: in one process that changes nothing (the collector refreshed it at the
    start of the iteration and nothing has trained since), but the learner of a distributed
    run collects nothing, and its acting copy would otherwise keep its initial weights. The
    rollout's recorded values come from the collector's weights: a distributed on-policy run
    makes its collectors wait for the learner's newest weights before each rollout
    (`Exchange(on_policy=True)`), so with one collector both are the same network. The
    recurrent path also re-runs the steps' values with that critic (the face's
    `rollout_values`, when it has one), so that values and bootstraps agree when the rollout
    came from an older collector.
    """
    gamma = float(setting(cfg, "policy.learn.gamma"))
    lam = float(setting(cfg, "policy.learn.gae_lambda"))
    reward_scale = float(setting(cfg, "policy.learn.reward_scale", 1.0))
    value_fn = getattr(policy, "value", None)
    refresh = getattr(policy, "refresh", None)

    def _refreshed() -> None:
        if refresh is not None:
            refresh()

    if buffer_ is not None and not callable(getattr(buffer_, "push", None)):
        raise TypeError(f"gae_estimator(cfg, policy, buffer_): a {type(buffer_).__name__} has no "
                        f"push(rows); pass a replay buffer such as rlpipe.data.ReplayBuffer")
    if is_recurrent(policy):  # V needs the carried state: the face's next_values(rollout)
        if buffer_ is not None:
            raise TypeError(f"gae_estimator(cfg, policy, buffer_): the recurrent policy "
                            f"{type(policy).__name__} trains on whole rollouts, which a replay "
                            f"buffer does not keep in order; drop buffer_")
        next_values = getattr(policy, "next_values", None)
        if next_values is None:
            raise TypeError(f"gae_estimator: the recurrent policy {type(policy).__name__} has no "
                            "next_values(rollout) -> [T, N] on its collect face (V of each next "
                            "observation from the carried state); pass policy.collect_mode of "
                            "a recurrent on-policy policy such as PPOLSTMPolicy")

        @contract(reads=("trajectories",), writes=("train_data",), role=Role.LEARNER)
        def _recurrent_gae_estimator(ctx: OnlineRLContext) -> None:
            steps = ctx.trajectories
            _refreshed()
            ctx.train_data = (recurrent_rollout(steps, gamma, lam, next_values, reward_scale,
                                                getattr(policy, "rollout_values", None))
                              if steps else None)

        return _recurrent_gae_estimator

    @contract(reads=("trajectories",), writes=("train_data",), role=Role.LEARNER)
    def _gae_estimator(ctx: OnlineRLContext) -> None:
        steps = ctx.trajectories
        _refreshed()
        ctx.train_data = rollout_to_batch(steps, gamma, lam, value_fn, reward_scale) if steps else None
        if buffer_ is not None:
            if ctx.train_data is not None and len(ctx.train_data["reward"]):
                buffer_.push(ctx.train_data)
            ctx.train_data = None

    return _gae_estimator


def multistep_trainer(cfg: Any, policy: Any = None, log_freq: Optional[int] = None) -> Callable:
    """DI-engine's on-policy name for `trainer`: `ctx.train_data` is a whole rollout, on which
    `policy.forward` runs its epochs of minibatch updates and reports them as "n_updates".
    Takes `(cfg, policy.learn_mode)` or DI-engine's `(policy.learn_mode, log_freq=100)`."""
    return trainer(cfg, policy, log_freq, name="multistep_trainer")


__all__ = ["gae_estimator", "multistep_trainer", "recurrent_rollout", "rollout_to_batch"]
