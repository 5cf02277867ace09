"""The field's standard defaults of each algorithm, in rlpipe's units, with where each comes from.

A generic run (`rlpipe train --algo A --env E`, any env without a zoo entry) starts from these
values rather than from the policy class's own defaults, which are sized for the zoo's pipelines
(8 envs, one update per 256 env steps) and barely learn off them. The tuned zoo entries do not
read this table.

The sources are the reference implementations users compare against: Stable-Baselines3's
documented constructor defaults for DQN, PPO, SAC and TD3, sb3-contrib's for recurrent PPO,
and the papers (or the scaled values of rlpipe's own measured entry, said so) for the others.
Their units become rlpipe's:

- SB3's `train_freq` env steps with `gradient_steps` updates → `policy.collect.n_sample` and
  `policy.learn.update_per_collect` with one env (`env.n_envs=1`, as SB3 builds one env);
- `learning_starts` → `replay.min_samples`, and the same number of uniformly random actions
  first (`policy.collect.random_collect_size`), which is what SB3 does before it;
- a schedule given as a fraction of the run (DQN's `exploration_fraction`) → env steps of the
  run's budget, computed when the config is resolved (`budget_rules`), so `--max-env-steps`
  moves it and the saved config holds the number;
- a target copy every `target_update_interval` env steps → every that many learn steps
  (`policy.learn.target_update_freq`) at the run's updates per env step.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, Union

__all__ = ["Standard", "STANDARDS", "budget_rules", "standard_config", "standard_sources"]

Value = Union[Any, Callable[[Mapping], Any]]


@dataclasses.dataclass(frozen=True)
class Standard:
    """One default: the dotted config key, its value (or a function of the resolved config, for
    a value that follows the budget) and where it comes from, in words."""

    key: str
    value: Value
    source: str

    @property
    def follows_budget(self) -> bool:
        return callable(self.value)


def _sb3(algo: str, rows: Iterable[Tuple[str, Value, str]]) -> Tuple[Standard, ...]:
    return tuple(Standard(key, value, f"SB3 {algo}: {what}") for key, value, what in rows)


def _eps_decay(cfg: Mapping) -> int:
    return max(1, int(0.1 * int(cfg["max_env_step"])))


_ONE_ENV = ("env.n_envs", 1, "one env (SB3 builds one from an env id)")

DQN = _sb3("DQN", [
    _ONE_ENV,
    ("policy.collect.n_sample", 4, "train_freq=4 (env steps between updates)"),
    ("policy.learn.update_per_collect", 1, "gradient_steps=1"),
    ("replay.capacity", 1_000_000, "buffer_size=1e6"),
    ("replay.min_samples", 100, "learning_starts=100"),
    ("policy.collect.random_collect_size", 100, "random actions before learning_starts"),
    ("policy.learn.lr", 1e-4, "learning_rate=1e-4"),
    ("policy.learn.batch_size", 32, "batch_size=32"),
    ("policy.learn.gamma", 0.99, "gamma=0.99"),
    ("policy.learn.double_q", False, "plain DQN targets (no double Q)"),
    ("policy.learn.target_update_freq", 2500,
     "target_update_interval=10000 env steps = 2500 updates at one per 4 env steps"),
    ("policy.learn.tau", None, "tau=1.0 (hard copy)"),
    ("policy.learn.grad_clip", 10.0, "max_grad_norm=10"),
    ("policy.learn.huber", True, "smooth L1 loss"),
    ("policy.model.hidden", (64, 64), "net_arch=[64, 64]"),
    ("policy.other.eps.type", "linear", "linear exploration schedule"),
    ("policy.other.eps.start", 1.0, "exploration_initial_eps=1.0"),
    ("policy.other.eps.end", 0.05, "exploration_final_eps=0.05"),
    ("policy.other.eps.decay", _eps_decay, "exploration_fraction=0.1 of the budget"),
    ("policy.other.eps.per_env_step", True, "epsilon recomputed at every env step"),
])

PPO = _sb3("PPO", [
    _ONE_ENV,
    ("policy.collect.n_sample", 2048, "n_steps=2048 (the rollout)"),
    ("policy.learn.lr", 3e-4, "learning_rate=3e-4"),
    ("policy.learn.lr_schedule", "constant", "constant learning rate"),
    ("policy.learn.epoch_per_collect", 10, "n_epochs=10"),
    ("policy.learn.batch_size", 64, "batch_size=64"),
    ("policy.learn.gamma", 0.99, "gamma=0.99"),
    ("policy.learn.gae_lambda", 0.95, "gae_lambda=0.95"),
    ("policy.learn.clip_ratio", 0.2, "clip_range=0.2"),
    ("policy.learn.value_clip", None, "clip_range_vf=None"),
    ("policy.learn.entropy_coef", 0.0, "ent_coef=0.0"),
    # SB3 weighs the mean squared value error by 0.5; rlpipe's value loss is ½·squared error
    ("policy.learn.value_coef", 1.0, "vf_coef=0.5 on the mean squared error"),
    ("policy.learn.grad_clip", 0.5, "max_grad_norm=0.5"),
    ("policy.learn.adv_norm", True, "normalize_advantage=True"),
    ("policy.learn.target_kl", None, "target_kl=None"),
    ("policy.model.hidden", (64, 64), "net_arch pi=[64, 64], vf=[64, 64]"),
    ("policy.model.activation", "tanh", "activation_fn=Tanh"),
    ("policy.model.share_encoder", False, "separate actor and critic networks"),
    ("policy.model.init_log_std", 0.0, "log_std_init=0.0"),
])

# SAC's and TD3's shared replay schedule: one update per env step after 100 random steps
_ONE_UPDATE_PER_STEP = [
    _ONE_ENV,
    ("policy.collect.n_sample", 1, "train_freq=1"),
    ("policy.learn.update_per_collect", 1, "gradient_steps=1"),
    ("replay.capacity", 1_000_000, "buffer_size=1e6"),
    ("replay.min_samples", 100, "learning_starts=100"),
    ("policy.collect.random_collect_size", 100, "random actions before learning_starts"),
]

SAC = _sb3("SAC", [
    *_ONE_UPDATE_PER_STEP,
    ("policy.learn.actor_lr", 3e-4, "learning_rate=3e-4"),
    ("policy.learn.critic_lr", 3e-4, "learning_rate=3e-4"),
    ("policy.learn.alpha_lr", 3e-4, "learning_rate=3e-4 (also the entropy coefficient's)"),
    ("policy.learn.batch_size", 256, "batch_size=256"),
    ("policy.learn.gamma", 0.99, "gamma=0.99"),
    ("policy.learn.tau", 0.005, "tau=0.005"),
    ("policy.learn.auto_alpha", True, "ent_coef='auto'"),
    ("policy.learn.init_alpha", 1.0, "ent_coef='auto' starts at 1.0"),
    ("policy.learn.target_entropy", None, "target_entropy='auto' (-action dimensions)"),
    ("policy.model.actor_hidden", (256, 256), "net_arch=[256, 256]"),
    ("policy.model.critic_hidden", (256, 256), "net_arch=[256, 256]"),
    ("policy.model.log_std_min", -20.0, "LOG_STD_MIN=-20"),
    ("policy.model.log_std_max", 2.0, "LOG_STD_MAX=2"),
])

TD3 = _sb3("TD3", [
    *_ONE_UPDATE_PER_STEP,
    ("policy.learn.actor_lr", 1e-3, "learning_rate=1e-3"),
    ("policy.learn.critic_lr", 1e-3, "learning_rate=1e-3"),
    ("policy.learn.batch_size", 256, "batch_size=256"),
    ("policy.learn.gamma", 0.99, "gamma=0.99"),
    ("policy.learn.tau", 0.005, "tau=0.005"),
    ("policy.learn.policy_delay", 2, "policy_delay=2"),
    ("policy.learn.target_noise", 0.2, "target_policy_noise=0.2"),
    ("policy.learn.target_noise_clip", 0.5, "target_noise_clip=0.5"),
    ("policy.model.actor_hidden", (400, 300), "net_arch=[400, 300]"),
    ("policy.model.critic_hidden", (400, 300), "net_arch=[400, 300]"),
]) + (
    # SB3 leaves exploration noise off by default (action_noise=None); the paper and its
    # reference code add N(0, 0.1) to every action, without which TD3 explores only through
    # its first random actions.
    Standard("policy.collect.noise_scale", 0.1,
             "TD3 paper (Fujimoto et al. 2018): Gaussian exploration noise, std 0.1; SB3's "
             "default has none"),
)

PPO_LSTM = tuple(
    Standard(key, value, f"sb3-contrib RecurrentPPO: {what}") for key, value, what in [
        _ONE_ENV,
        ("policy.collect.n_sample", 128, "n_steps=128 (the rollout)"),
        ("policy.learn.batch_size", 128, "batch_size=128"),
        ("policy.learn.chunk_len", 128, "sequences cut only at the rollout's ends"),
        ("policy.learn.lr", 3e-4, "learning_rate=3e-4"),
        ("policy.learn.epoch_per_collect", 10, "n_epochs=10"),
        ("policy.learn.gamma", 0.99, "gamma=0.99"),
        ("policy.learn.gae_lambda", 0.95, "gae_lambda=0.95"),
        ("policy.learn.clip_ratio", 0.2, "clip_range=0.2"),
        ("policy.learn.entropy_coef", 0.0, "ent_coef=0.0"),
        ("policy.learn.value_coef", 1.0, "vf_coef=0.5 on the mean squared error"),
        ("policy.learn.grad_clip", 0.5, "max_grad_norm=0.5"),
        ("policy.model.core_size", 256, "lstm_hidden_size=256"),
        ("policy.model.core_kind", "lstm", "one LSTM layer"),
        ("policy.model.share_encoder", False, "shared_lstm=False, enable_critic_lstm=True"),
        ("policy.model.hidden", (64, 64), "net_arch pi=[64, 64], vf=[64, 64]"),
        ("policy.model.activation", "tanh", "activation_fn=Tanh"),
    ])

# The paper's R2D2 (Kapturowski et al. 2019) is sized for Atari with 256 actors (sequences of
# 80 + 40 burn-in, a target copy every 2500 updates, about one update per 3,200 env steps of
# one learner); on one process that learns nothing within a few 100k env steps. The generic
# defaults are those of rlpipe's measured cartpole-novel-r2d2 entry (solves CartPole without
# velocities within 200k env steps), which keeps the paper's sequence replay, priorities,
# value rescaling and n-step targets at a smaller scale.
_R2D2_SOURCE = "rlpipe's cartpole-novel-r2d2 entry (the paper's Atari values scaled to one process)"
R2D2 = tuple(Standard(key, value, _R2D2_SOURCE) for key, value in [
    ("env.n_envs", 8),
    ("policy.collect.n_sample", 64),
    ("policy.learn.update_per_collect", 4),
    ("replay.capacity", 20_000),
    ("replay.prioritized", True),
    ("replay.alpha", 0.9),
    ("replay.beta", 0.6),
    ("replay.min_samples", 2000),
    ("policy.model.hidden", (64,)),
    ("policy.model.core_size", 64),
    ("policy.learn.lr", 1e-3),
    ("policy.learn.adam_eps", 1e-8),
    ("policy.learn.batch_size", 32),
    ("policy.learn.nstep", 3),
    ("policy.learn.gamma", 0.99),
    ("policy.learn.seq_len", 16),
    ("policy.learn.burn_in", 4),
    ("policy.learn.stride", 8),
    ("policy.learn.target_update_freq", 200),
    ("policy.learn.grad_clip", 10.0),
    ("policy.other.eps.end", 0.02),
    ("policy.other.eps.decay", _eps_decay),
]) + (Standard("policy.other.eps.per_env_step", True, "SB3 DQN: epsilon at every env step"),)

STANDARDS: Dict[str, Tuple[Standard, ...]] = {
    "dqn": DQN, "ppo": PPO, "sac": SAC, "td3": TD3, "ppo-lstm": PPO_LSTM, "r2d2": R2D2,
}
"""Registered algorithm name → its standard defaults. An algorithm without a row trains at its
class defaults: the offline ones (their papers' values already), MAPPO and IPPO (Yu et al.
2022's MPE settings already; they train through their zoo entries, the generic `--algo/--env`
path takes single-agent envs) and your own."""


def _table(algo: Optional[str]) -> Tuple[Standard, ...]:
    return STANDARDS.get(algo or "", ())


def _nested(key: str, value: Any) -> Dict[str, Any]:
    head, _, rest = key.partition(".")
    return {head: _nested(rest, value) if rest else value}


def _merge_into(target: Dict[str, Any], extra: Mapping[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _merge_into(target[key], value)
        else:
            target[key] = dict(value) if isinstance(value, Mapping) else value


def standard_config(algo: Optional[str]) -> Dict[str, Any]:
    """The nested config of `algo`'s fixed standard defaults (budget-following ones are set
    by `budget_rules` once the budget is known); {} for an algorithm without a row."""
    config: Dict[str, Any] = {}
    for row in _table(algo):
        if not row.follows_budget:
            _merge_into(config, _nested(row.key, row.value))
    return config


def budget_rules(algo: Optional[str], cfg: Any, explicit: Iterable[str] = ()) -> None:
    """Set, in the resolved `cfg`, the defaults of `algo` that follow the run's budget (e.g.
    DQN's ε decay over the first 10% of it), except the keys in `explicit` (the user set them)."""
    explicit = set(explicit)
    for row in _table(algo):
        if row.follows_budget and row.key not in explicit:
            *path, last = row.key.split(".")
            section = cfg
            for part in path:
                section = section[part]
            section[last] = row.value(cfg)


def standard_sources(algo: Optional[str]) -> Dict[str, str]:
    """Dotted key → where its standard default comes from."""
    return {row.key: row.source for row in _table(algo)}


def explicit_keys(user: Optional[Mapping], overrides: Iterable[str] = ()) -> List[str]:
    """The dotted keys a user set: the leaves of a user config and the keys of `--set` lines."""
    keys: List[str] = []

    def walk(section: Mapping, path: str) -> None:
        for key, value in section.items():
            full = f"{path}.{key}" if path else str(key)
            if isinstance(value, Mapping) and value:
                walk(value, full)
            else:
                keys.append(full)

    walk(user or {}, "")
    keys += [line.split("=", 1)[0].strip() for line in overrides]
    return keys
