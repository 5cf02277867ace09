"""Search spaces of `rlpipe tune`: what is sampled per algorithm, and how a sample becomes
config overrides.

The ranges are rl-zoo3's (`hyperparams_opt.py`: `sample_dqn_params`, `sample_ppo_params`,
`sample_sac_params`, `sample_td3_params`), translated to rlpipe's keys. A few SB3 knobs are
counted in other units here, so they are converted rather than copied:
- `train_freq` counts vector-env steps (SB3's meaning): `policy.collect.n_sample` is
  `train_freq * env.n_envs`; DQN then makes one update per `subsample_steps` env steps, SAC and
  TD3 one per env step (rl-zoo's `gradient_steps = train_freq`);
- DQN's `target_update_interval` is in env steps, rlpipe's `target_update_freq` in updates;
- `exploration_fraction` is a fraction of the tuning budget, `eps.decay` env steps;
- PPO's `n_steps` is per env, `policy.collect.n_sample` summed over envs.
Not translated: TD3's Ornstein-Uhlenbeck noise (rlpipe's is Gaussian: `noise_std` only) and
SAC's `log_std_init` (gSDE only).

A YAML file (`--space FILE`) changes a space: `space:` maps a parameter to a new range
(`{low, high, log}` or `{choices: [...]}`), to a fixed value, or to null (dropped: the entry's
own value is kept); a parameter the algorithm lacks needs `key:`, the config key it sets.
`enqueue:` lists parameter sets tried first, in order (e.g. the entry's own settings).
"""
from __future__ import annotations

import dataclasses
import difflib
import math
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from .config_file import read_yaml

GAMMAS = [0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 0.9999]
NETS = {"tiny": (64,), "small": (64, 64), "medium": (256, 256), "big": (400, 300)}
FREQS = [1, 4, 8, 16, 32, 64, 128, 256, 512]
TAUS = [0.001, 0.005, 0.01, 0.02, 0.05, 0.08]
FILE_KEYS = ("space", "enqueue")


@dataclasses.dataclass(frozen=True)
class Param:
    """One sampled value: a float or int range (`log`: log-uniform), a list of `choices`, or
    one `fixed` value. `key`: the config key it sets as is (None: the algorithm's `derive`
    turns it into keys)."""

    name: str
    low: Optional[float] = None
    high: Optional[float] = None
    log: bool = False
    choices: Optional[tuple] = None
    integer: bool = False
    key: Optional[str] = None
    fixed: Any = dataclasses.field(default=None, compare=False)
    is_fixed: bool = False

    def suggest(self, trial: Any) -> Any:
        if self.is_fixed:
            return self.fixed
        if self.choices is not None:
            return trial.suggest_categorical(self.name, list(self.choices))
        if self.integer:
            return trial.suggest_int(self.name, int(self.low), int(self.high), log=self.log)
        return trial.suggest_float(self.name, float(self.low), float(self.high), log=self.log)

    def describe(self) -> Any:
        """A plain form, recorded in the study so a rerun with another space is caught."""
        if self.is_fixed:
            return {"fixed": self.fixed, "key": self.key}
        if self.choices is not None:
            return {"choices": list(self.choices), "key": self.key}
        return {"low": self.low, "high": self.high, "log": self.log, "int": self.integer,
                "key": self.key}


Derive = Callable[[Dict[str, Any], Any, int], Dict[str, Any]]


@dataclasses.dataclass
class Space:
    """The parameters of one algorithm, how a sample becomes config values, and the
    parameter sets to try first."""

    algo: str
    params: Dict[str, Param]
    derive: Derive
    enqueue: List[Dict[str, Any]] = dataclasses.field(default_factory=list)

    def sample(self, trial: Any) -> Dict[str, Any]:
        return {name: p.suggest(trial) for name, p in self.params.items()}

    def overrides(self, values: Mapping[str, Any], cfg: Any, budget: int) -> Dict[str, Any]:
        """{config key: value} of one sample, for an entry resolved as `cfg`."""
        values = dict(values)
        direct = {p.key: values.pop(name) for name, p in self.params.items()
                  if p.key is not None and name in values}
        return {**self.derive(values, cfg, budget), **direct}

    def describe(self) -> Dict[str, Any]:
        return {"algo": self.algo, "params": {n: p.describe() for n, p in self.params.items()}}


def _pick(values: Dict[str, Any], name: str) -> Any:
    return values.pop(name, None)


def _set(out: Dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


def _dqn(values: Dict[str, Any], cfg: Any, budget: int) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    n_envs = int(cfg.env.n_envs)
    for name, key in (("learning_rate", "policy.learn.lr"), ("gamma", "policy.learn.gamma"),
                      ("batch_size", "policy.learn.batch_size"), ("buffer_size", "replay.capacity"),
                      ("exploration_final_eps", "policy.other.eps.end")):
        _set(out, key, _pick(values, name))
    fraction = _pick(values, "exploration_fraction")
    if fraction is not None:
        out["policy.other.eps.decay"] = max(1, int(fraction * budget))
    _warm_up(out, _pick(values, "learning_starts"), cfg, budget)
    freq, subsample = _pick(values, "train_freq"), _pick(values, "subsample_steps")
    subsample = subsample or 1
    if freq is not None:
        out["policy.collect.n_sample"] = freq * n_envs
        out["policy.learn.update_per_collect"] = max(freq * n_envs // subsample, 1)
    interval = _pick(values, "target_update_interval")
    if interval is not None:
        out["policy.learn.target_update_freq"] = max(1, round(interval / subsample))
    _set(out, "policy.model.hidden", _net(_pick(values, "net_arch")))
    return _no_leftovers(out, values, "dqn")


def _ppo(values: Dict[str, Any], cfg: Any, budget: int) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for name, key in (("learning_rate", "policy.learn.lr"), ("batch_size", "policy.learn.batch_size"),
                      ("ent_coef", "policy.learn.entropy_coef"),
                      ("clip_range", "policy.learn.clip_ratio"),
                      ("n_epochs", "policy.learn.epoch_per_collect"),
                      ("max_grad_norm", "policy.learn.grad_clip"),
                      ("activation_fn", "policy.model.activation")):
        _set(out, key, _pick(values, name))
    for name, key in (("one_minus_gamma", "policy.learn.gamma"),
                      ("one_minus_gae_lambda", "policy.learn.gae_lambda")):
        value = _pick(values, name)
        if value is not None:
            out[key] = 1.0 - value
    steps = _pick(values, "n_steps")
    if steps is not None:
        out["policy.collect.n_sample"] = steps * int(cfg.env.n_envs)
    rollout = int(out.get("policy.collect.n_sample", cfg.policy.collect.n_sample))
    if out.get("policy.learn.batch_size", 0) > rollout:  # rl-zoo's rule: at most the rollout
        out["policy.learn.batch_size"] = rollout
    _set(out, "policy.model.hidden", _net(_pick(values, "net_arch")))
    return _no_leftovers(out, values, "ppo")


def _actor_critic(values: Dict[str, Any], cfg: Any, budget: int) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    lr = _pick(values, "learning_rate")
    for key in ("actor_lr", "critic_lr", "alpha_lr"):
        if lr is not None and key in cfg.policy.learn:
            out[f"policy.learn.{key}"] = lr
    for name, key in (("gamma", "policy.learn.gamma"), ("batch_size", "policy.learn.batch_size"),
                      ("buffer_size", "replay.capacity"), ("tau", "policy.learn.tau"),
                      ("noise_std", "policy.collect.noise_scale")):
        _set(out, key, _pick(values, name))
    _warm_up(out, _pick(values, "learning_starts"), cfg, budget)
    freq = _pick(values, "train_freq")
    if freq is not None:  # one update per env step, as rl-zoo's gradient_steps = train_freq
        out["policy.collect.n_sample"] = out["policy.learn.update_per_collect"] = \
            freq * int(cfg.env.n_envs)
    net = _net(_pick(values, "net_arch"))
    if net is not None:
        out["policy.model.actor_hidden"] = out["policy.model.critic_hidden"] = net
    return _no_leftovers(out, values, "sac/td3")


def _warm_up(out: Dict[str, Any], starts: Optional[int], cfg: Any, budget: int) -> None:
    """rl-zoo's `learning_starts`, at most half the tuning budget (a trial that never learns
    scores nothing) and at most the replay capacity (learning would never start)."""
    if starts is None:
        return
    capacity = int(out.get("replay.capacity", cfg.replay.capacity))
    steps = min(int(starts), budget // 2, capacity)
    out["policy.collect.random_collect_size"] = out["replay.min_samples"] = steps


def _net(name: Optional[str]) -> Optional[tuple]:
    if name is None:
        return None
    if name not in NETS:
        raise ValueError(f"net_arch {name!r} is not one of {', '.join(NETS)}")
    return NETS[name]


def _no_leftovers(out: Dict[str, Any], values: Dict[str, Any], algo: str) -> Dict[str, Any]:
    if values:  # a parameter the rules above do not use: a space without `key:` for it
        raise ValueError(f"search space of {algo}: parameter(s) {', '.join(sorted(values))} "
                         f"set no config key; give each a `key:` in the space file")
    return out


def _f(name: str, low: float, high: float, log: bool = False) -> Param:
    return Param(name, low=low, high=high, log=log)


def _c(name: str, choices: Sequence[Any]) -> Param:
    return Param(name, choices=tuple(choices))


def _spaces() -> Dict[str, Space]:
    dqn = [_c("gamma", GAMMAS), _f("learning_rate", 1e-5, 1, log=True),
           _c("batch_size", [16, 32, 64, 100, 128, 256, 512]),
           _c("buffer_size", [10_000, 50_000, 100_000, 1_000_000]),
           _f("exploration_final_eps", 0, 0.2), _f("exploration_fraction", 0, 0.5),
           _c("target_update_interval", [1, 1000, 5000, 10000, 15000, 20000]),
           _c("learning_starts", [0, 1000, 5000, 10000, 20000]),
           _c("train_freq", [1, 4, 8, 16, 128, 256, 1000]), _c("subsample_steps", [1, 2, 4, 8]),
           _c("net_arch", ["tiny", "small", "medium"])]
    ppo = [_c("batch_size", [32, 64, 128, 256, 512]),
           _c("n_steps", [32, 64, 128, 256, 512, 1024, 2048]),
           _f("one_minus_gamma", 0.0001, 0.03, log=True),
           _f("one_minus_gae_lambda", 0.0001, 0.1, log=True),
           _f("learning_rate", 1e-5, 0.002, log=True), _f("ent_coef", 1e-8, 0.1, log=True),
           _c("clip_range", [0.1, 0.2, 0.3, 0.4]), _c("n_epochs", [1, 5, 10, 20]),
           _f("max_grad_norm", 0.3, 2), _c("net_arch", ["tiny", "small", "medium"]),
           _c("activation_fn", ["tanh", "relu"])]
    sac = [_c("gamma", GAMMAS), _f("learning_rate", 1e-5, 1, log=True),
           _c("batch_size", [16, 32, 64, 128, 256, 512, 1024, 2048]),
           _c("buffer_size", [10_000, 100_000, 1_000_000]),
           _c("learning_starts", [0, 1000, 10000, 20000]), _c("train_freq", FREQS),
           _c("tau", TAUS), _c("net_arch", ["small", "medium", "big"])]
    td3 = [p for p in sac if p.name != "learning_starts"]
    td3[2] = _c("batch_size", [16, 32, 64, 100, 128, 256, 512, 1024, 2048])
    td3.insert(-1, _f("noise_std", 0, 1))
    return {"dqn": Space("dqn", {p.name: p for p in dqn}, _dqn),
            "ppo": Space("ppo", {p.name: p for p in ppo}, _ppo),
            "ppo-lstm": Space("ppo-lstm", {p.name: p for p in ppo if p.name != "net_arch"}, _ppo),
            "sac": Space("sac", {p.name: p for p in sac}, _actor_critic),
            "td3": Space("td3", {p.name: p for p in td3}, _actor_critic)}


def _no_rules(values: Dict[str, Any], cfg: Any, budget: int) -> Dict[str, Any]:
    return _no_leftovers({}, values, "this algorithm")


def space_for(algo: Optional[str], file: Optional[str] = None) -> Space:
    """The search space of `algo` (a registered policy name), changed by the YAML `file`."""
    spaces = _spaces()
    space = spaces.get(algo or "")
    if space is None:
        if file is None:
            raise ValueError(f"rlpipe tune has no search space for algorithm {algo!r} (it has "
                             f"{', '.join(spaces)}); give one with --space FILE, each parameter "
                             f"with the config key it sets (`lr: {{low: 1e-4, high: 1e-2, "
                             f"log: true, key: policy.learn.lr}}`)")
        space = Space(algo or "?", {}, _no_rules)
    return space if file is None else apply_space_file(space, file)


def apply_space_file(space: Space, path: str) -> Space:
    """`space` with the changes of the YAML file at `path` (see the module docstring)."""
    data = read_yaml(path, '--space')
    unknown = [k for k in data if k not in FILE_KEYS]
    if unknown:
        raise ValueError(f"--space {path}: unknown top-level key {unknown[0]!r} (the file "
                         f"has {' and '.join(FILE_KEYS)})")
    params = dict(space.params)
    for name, spec in (data.get("space") or {}).items():
        params[name] = _param(name, spec, params.get(name), path, space)
    params = {n: p for n, p in params.items() if p is not None}
    if not params:
        raise ValueError(f"--space {path}: no parameter left to tune")
    enqueue = data.get("enqueue") or []
    if not isinstance(enqueue, list) or not all(isinstance(e, dict) for e in enqueue):
        raise ValueError(f"--space {path}: `enqueue` must be a list of mappings "
                         f"(parameter: value), one per trial to try first")
    for row in enqueue:
        for name in row:
            if name not in params:
                raise ValueError(f"--space {path}: enqueue names unknown parameter {name!r}"
                                 f"{_close(name, params)}")
    return Space(space.algo, params, space.derive, [dict(r) for r in enqueue])


def _param(name: str, spec: Any, known: Optional[Param], path: str, space: Space
           ) -> Optional[Param]:
    if spec is None:
        return None  # dropped: the entry's own value stays
    key = spec.get("key") if isinstance(spec, dict) else None
    if known is None and key is None:
        raise ValueError(f"--space {path}: unknown space key {name!r} for {space.algo}"
                         f"{_close(name, space.params)}; a new parameter needs `key:`, the "
                         f"config key it sets (e.g. `{name}: {{low: 0.1, high: 1, key: "
                         f"policy.learn.{name}}}`)")
    key = key if key is not None else (known.key if known else None)
    if not isinstance(spec, dict):
        return Param(name, key=key, fixed=spec, is_fixed=True)
    extra = set(spec) - {"low", "high", "log", "choices", "key", "int", "value"}
    if extra:
        raise ValueError(f"--space {path}: parameter {name!r} has unknown field(s) "
                         f"{', '.join(sorted(extra))} (it takes low/high/log/int, choices, "
                         f"value or key)")
    if "value" in spec:
        return Param(name, key=key, fixed=spec["value"], is_fixed=True)
    if "choices" in spec:
        if not isinstance(spec["choices"], list) or not spec["choices"]:
            raise ValueError(f"--space {path}: {name}.choices must be a non-empty list")
        return Param(name, choices=tuple(spec["choices"]), key=key)
    low, high = spec.get("low"), spec.get("high")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)) \
            or not math.isfinite(low) or not math.isfinite(high) or not low < high:
        raise ValueError(f"--space {path}: {name} needs numbers low < high (got low={low!r}, "
                         f"high={high!r}), or choices, or value")
    if spec.get("log") and low <= 0:
        raise ValueError(f"--space {path}: {name} is log-uniform, so low must be > 0 "
                         f"(got {low})")
    return Param(name, low=low, high=high, log=bool(spec.get("log")),
                 integer=bool(spec.get("int")), key=key)


def _close(name: str, known: Mapping[str, Any]) -> str:
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    names = ", ".join(known) or "none"
    return f" (did you mean {', '.join(close)}?)" if close else f" (it has {names})"
