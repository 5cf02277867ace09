"""Generic zoo entries: any trainable policy on any environment, without writing an entry.

`rlpipe train --algo ppo --env Acrobot-v1` trains the entry named ``"ppo@Acrobot-v1"``: the
algorithm's defaults, the env's spaces, the stop value from the env spec's `reward_threshold`
(none when it has none), in `runs/Acrobot-v1-ppo/<timestamp>/`. The pipeline (off- or
on-policy) is the one the policy class declares in its `pipeline` attribute, so a policy
registered with `rlpipe.policies.register_policy` trains the same way.

`rlpipe train --algo dqn --dataset cartpole/expert-v0 [--env ID]` trains the entry named
``"dqn@dataset:cartpole/expert-v0"``: the offline pipeline (`rlpipe/pipelines/offline.py`) on
that data set, evaluated in `--env` or the data set's own env, in
`runs/cartpole-expert-v0-dqn/<timestamp>/`.
Offline policies (`pipeline = "offline"`) and off-policy ones train there; an offline policy
given an env and no data set trains online in the off-policy pipeline (e.g. fine-tuning with
`--init-from`).

- algorithm: a registered name (`dqn`, `ppo`, `sac`, `td3`, or one of yours) or
  `module:Class` (the module is imported; the current folder is on the import path);
- env: a gymnasium id, a name registered with `rlpipe.envs.register_env`, or `module:attr`
  where `attr` is a callable returning an env (a factory) or a gymnasium id that importing
  `module` registers;
- `imports`: modules imported first (`--import`), e.g. ones that register an env or a policy;
  they are recorded in the run's config (`imports`) so `--resume` and `rlpipe eval` import them.
"""
from __future__ import annotations

import functools
import importlib
import os
import re
import sys
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

import gymnasium as gym
from easydict import EasyDict

from rlpipe.envs import register_env
from rlpipe import standard_defaults
from rlpipe.envs._registry import registered_envs, resolve_env
from rlpipe.policies import Policy, get_policy, policy_names
from rlpipe.policies.registry import registered_name, spaces_line

from .registry import Entry

SEP = "@"
DATASET = "dataset:"  # an offline entry's ENV part: dataset:<data set id>
PIPELINES = ("off-policy", "on-policy", "offline")
OFFLINE_CAPABLE = ("off-policy", "offline")  # pipelines whose policies learn from a data set


def is_generic(name: str) -> bool:
    """Whether `name` names a generic entry (``ALGO@ENV``) rather than a zoo module."""
    return SEP in name


def import_modules(modules: Iterable[str], what: str = "--import") -> None:
    """Import each module (the current folder first on the import path), or say which failed."""
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ImportError(f"{what} {module!r}: cannot import it ({exc}); check the module "
                              f"name and that it is on the import path (the current folder "
                              f"is)") from exc


def _import_attr(spec: str, what: str) -> Any:
    module, _, attr = spec.partition(":")
    import_modules([module], what=f"{what} {spec!r}: module")
    if not hasattr(sys.modules[module], attr):
        raise ValueError(f"{what} {spec!r}: module {module!r} has no attribute {attr!r}")
    return getattr(sys.modules[module], attr)


def policy_class(algo: str) -> type:
    """The policy class that `--algo ALGO` names; it must declare a zoo pipeline."""
    if ":" in algo:
        cls = _import_attr(algo, "--algo")
    else:
        try:
            cls = get_policy(algo)
        except KeyError:
            known = ", ".join(trainable_names())
            raise ValueError(f"--algo {algo!r}: no algorithm of that name (known: {known}); "
                             f"for one of your own pass --algo MODULE:CLASS, or --import MODULE "
                             f"where MODULE calls rlpipe.policies.register_policy") from None
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise TypeError(f"--algo {algo!r} is {cls!r}, not a subclass of rlpipe.policies.Policy")
    if getattr(cls, "pipeline", "") not in PIPELINES:
        raise ValueError(f"--algo {algo!r}: {cls.__name__} declares no zoo pipeline (its class "
                         f"attribute `pipeline` is {getattr(cls, 'pipeline', None)!r}); set it to "
                         f"'off-policy', 'on-policy' or 'offline' to train it from the CLI")
    return cls


def trainable_names(source: Optional[str] = None) -> List[str]:
    """Registered policies that the zoo can train (they declare a pipeline); `source`
    "online": those that train from an env (every pipeline but "offline"), "offline": those
    that train from a data set (`--dataset`: offline and off-policy ones)."""
    names = [n for n in policy_names() if getattr(get_policy(n), "pipeline", "") in PIPELINES]
    if source is None:
        return names
    if source not in ("online", "offline"):
        raise ValueError(f"trainable_names(source={source!r}): 'online', 'offline' or None")
    if source == "online":
        return [n for n in names if get_policy(n).pipeline != "offline"]
    return [n for n in names if get_policy(n).pipeline in ("offline", "off-policy")]


def builtin_name(cls: type) -> Optional[str]:
    """The registered name of one of rlpipe's own policy classes; None for a user's class."""
    name = registered_name(cls)
    return name if name is not None and cls.__module__.startswith("rlpipe.") else None


def canonical_algo(algo: str, cls: type) -> str:
    """How the entry name records the algorithm: the registered name of a built-in policy,
    else `module:Class`, so that another process (a resumed run, a collector) finds it again
    without the registration having run there."""
    name = builtin_name(cls)
    if name is not None:
        return name
    if ":" in algo:
        return algo
    return f"{cls.__module__}:{cls.__qualname__}"


def prepare_env(env_id: str) -> None:
    """Make `module:attr` env ids resolvable by `EnvManager` in this process (registers them
    with `rlpipe.envs.register_env`); other ids need nothing."""
    if ":" not in env_id or env_id.lower() in registered_envs():
        return
    target = _import_attr(env_id, "--env")
    if isinstance(target, str) or callable(target):
        register_env(env_id, target, overwrite=True)
    else:
        raise TypeError(f"--env {env_id!r} is a {type(target).__name__}: name a callable that "
                        f"returns a gymnasium.Env (a factory) or a gymnasium id string")


def probe_env(env_id: str, env_kwargs: Optional[Mapping] = None) -> Tuple[gym.Space, gym.Space,
                                                                            Optional[float]]:
    """(observation space, action space, the spec's reward_threshold) of one env instance."""
    prepare_env(env_id)
    env = resolve_env(env_id, env_kwargs).make()
    try:
        spec = getattr(env, "spec", None)
        threshold = getattr(spec, "reward_threshold", None) if spec is not None else None
        return env.observation_space, env.action_space, threshold
    finally:
        env.close()


def spaces_of(config: Mapping) -> Tuple[gym.Space, gym.Space]:
    """(observation space, action space) of a run config: its data set's, else its env's."""
    dataset_id = (config.get("dataset") or {}).get("id")
    if dataset_id:
        from rlpipe.pipelines.offline import spec_of

        spec = spec_of(dataset_id)
        return spec.observation_space, spec.action_space
    env = config.get("env") or {}
    obs_space, action_space, _ = probe_env(env.get("id"), env.get("env_kwargs") or None)
    return obs_space, action_space


def check_fits(algo: str, cls: type, env_id: str, obs_space: gym.Space,
               action_space: gym.Space) -> None:
    """Raise a ValueError in CLI words when `cls` cannot act in the env's spaces (the space
    table declared on the policy classes: `obs_space_types`, `action_space_types`); an action
    space mismatch also says which algorithms take which action spaces."""
    for what, space, attr in (("observation", obs_space, "obs_space_types"),
                              ("action", action_space, "action_space_types")):
        allowed = getattr(cls, attr)
        if isinstance(space, allowed):
            continue
        fits = _single_agent_fits(obs_space, action_space)
        needs = " or ".join(t.__name__ for t in allowed)
        instead = (": use " + ", ".join(f"--algo {n}" for n in fits[:-1])
                   + (" or " if len(fits) > 1 else "") + f"--algo {fits[-1]}") if fits else \
            ": no registered algorithm handles it"
        table = f" ({spaces_line()})" if what == "action" else ""
        raise ValueError(f"{algo} needs a {needs} {what} space; {env_id}'s {what}s are "
                         f"{space!r}{instead}{table}")


def _single_agent_fits(obs_space: gym.Space, action_space: gym.Space) -> List[str]:
    """The registered single-agent algorithms that take these spaces."""
    return [n for n in trainable_names("online")
            if not getattr(get_policy(n), "multi_agent", False)
            and isinstance(obs_space, get_policy(n).obs_space_types)
            and isinstance(action_space, get_policy(n).action_space_types)]


def check_single_agent(algo: str, cls: type, env_id: str, obs_space: gym.Space,
                       action_space: gym.Space) -> None:
    """Raise a ValueError in CLI words when a multi-agent algorithm is given a single-agent env
    (one that `probe_env` could build: a gymnasium env): which algorithms fit that env, and what
    the multi-agent one needs instead."""
    if not getattr(cls, "multi_agent", False):
        return
    fits = _single_agent_fits(obs_space, action_space)
    instead = (f"train it with a single-agent algorithm ({', '.join(f'--algo {n}' for n in fits)})"
               if fits else "no single-agent algorithm registered here takes its spaces")
    raise ValueError(f"{env_id} is a single-agent env, but --algo {algo} is a multi-agent "
                     f"algorithm: {instead}. {algo} needs a PettingZoo parallel env, named by a "
                     f"module path such as 'mpe2/simple_spread_v3' or 'module:factory' "
                     f"(pip install \"rlpipe[marl]\"); the zoo's multi-agent entries train it "
                     f"(`rlpipe list`; another env: --set env.id=ID), see docs/multi_agent.md")


def run_name(algo: str, env_id: str) -> str:
    """The run folder's name under runs/: `<env>-<algo>`, e.g. `Acrobot-v1-ppo`."""
    label = algo.rpartition(":")[2].lower() if ":" in algo else algo.lower()
    return re.sub(r"[^A-Za-z0-9._-]+", "-", f"{env_id}-{label}").strip("-")


def _resolver(pipeline: str) -> Callable[..., EasyDict]:
    """The resolve_config of `pipeline` ("offline" when the entry trains on a data set; an
    offline policy on an env trains online, off-policy)."""
    if pipeline == "on-policy":
        from rlpipe.pipelines.onpolicy import resolve_config
    elif pipeline == "offline":
        from rlpipe.pipelines.offline import resolve_config
    else:
        from rlpipe.pipelines.offpolicy import resolve_config
    return resolve_config


def _runner(pipeline: str) -> Callable[[Any, Any], Dict[str, Any]]:
    if pipeline == "on-policy":
        from rlpipe.pipelines.onpolicy import run_onpolicy
        return run_onpolicy
    if pipeline == "offline":
        from rlpipe.pipelines.offline import run_offline
        return run_offline
    from rlpipe.pipelines.offpolicy import run_offpolicy
    return run_offpolicy


def check_offline_capable(algo: str, cls: type) -> None:
    """A one-line error when `cls` cannot learn from a data set (an on-policy algorithm)."""
    if cls.pipeline in OFFLINE_CAPABLE:
        return
    able = ", ".join(n for n in policy_names() if get_policy(n).pipeline in OFFLINE_CAPABLE)
    raise ValueError(f"--algo {algo} is {cls.pipeline}: it learns from its own fresh rollouts, "
                     f"not from a data set; with --dataset use one of: {able}")


def _imports_of(config: Mapping, where: str) -> Tuple[Dict[str, Any], List[str]]:
    rest = dict(config)
    imports = rest.pop("imports", [])
    if not isinstance(imports, (list, tuple)) or not all(isinstance(m, str) for m in imports):
        raise TypeError(f"{where} key 'imports' must be a list of module names, got {imports!r}")
    return rest, list(imports)


def prepare_run(cfg: Any) -> None:
    """What a generic entry's run needs in each of its processes before it trains: the
    modules of its `imports` imported, and a `module:attr` env registered."""
    import_modules(cfg.get("imports", []))
    if cfg.env.id is not None:
        prepare_env(cfg.env.id)


def _resolve_with_imports(base_resolve: Callable[..., EasyDict], standard_name: Optional[str],
                          policy_cls: Any, entry_config: Mapping,
                          user: Optional[Mapping] = None) -> EasyDict:
    """The pipeline's resolve_config, with the run's `imports` (the user's, else the entry's)
    imported first and recorded in the config, and the budget-following standard defaults."""
    entry_rest, imports = _imports_of(entry_config, "the entry config's")
    user_rest, user_imports = _imports_of(user or {}, "the config's")
    imports = user_imports or imports
    import_modules(imports)
    cfg = base_resolve(policy_cls, entry_rest, user_rest)
    cfg.imports = imports
    standard_defaults.budget_rules(standard_name, cfg, standard_defaults.explicit_keys(user_rest))
    return cfg


def build_entry(name: str, stop_value: Optional[float] = None,
                imports: Iterable[str] = ()) -> Entry:
    """The record of generic entry `name` (``ALGO@ENV``)."""
    algo, _, env_id = name.partition(SEP)
    if not algo or not env_id:
        raise ValueError(f"generic entry {name!r}: expected ALGO{SEP}ENV (e.g. ppo{SEP}CartPole-v1)")
    import_modules(imports)
    cls = policy_class(algo)
    # the row of rlpipe's own algorithms in the table of standard defaults (online runs only:
    # an offline run's keys are the data set's and its policy's)
    standard_name = None if env_id.startswith(DATASET) else builtin_name(cls)
    if env_id.startswith(DATASET):
        dataset_id = env_id[len(DATASET):]
        check_offline_capable(algo, cls)
        pipeline = "offline"
        doc = (f"{cls.__name__} trained offline on data set {dataset_id} with the algorithm's "
               f"defaults (`rlpipe train --algo {algo} --dataset {dataset_id}`).")
        folder = run_name(algo, dataset_id)
        config: Dict[str, Any] = {"dataset": {"id": dataset_id}, "env": {"stop_value": stop_value},
                                  "imports": list(imports)}
    else:
        prepare_env(env_id)
        pipeline = "on-policy" if cls.pipeline == "on-policy" else "off-policy"
        doc = (f"{cls.__name__} on {env_id} with the algorithm's standard defaults (`rlpipe "
               f"train --algo {algo} --env {env_id}`; `rlpipe config` names the source of each).")
        folder = run_name(algo, env_id)
        standard = standard_defaults.standard_config(standard_name)
        config = {**standard, "env": {**standard.get("env", {}), "id": env_id,
                                      "stop_value": stop_value},
                  "imports": list(imports)}
    return Entry(name=name, policy_cls=cls, config=config, runner=_runner(pipeline),
                 pipeline=pipeline, run_name=folder,
                 follow_budget=functools.partial(standard_defaults.budget_rules, standard_name),
                 resolve_config=functools.partial(_resolve_with_imports, _resolver(pipeline),
                                                  standard_name),
                 prepare=prepare_run, standard=standard_name, doc=doc)


def generic_name(algo: str, env_id: Optional[str], imports: Iterable[str] = (),
                 dataset: Optional[str] = None) -> Tuple[str, Optional[float]]:
    """(entry name, stop value) for `--algo ALGO --env ENV` (or `--dataset ID [--env ENV]`):
    imports `imports`, checks that the algorithm fits the env's (and the data set's) spaces,
    and reads the stop value from the env spec."""
    import_modules(imports)
    cls = policy_class(algo)
    if dataset is None:
        obs_space, action_space, threshold = probe_env(env_id)
        check_single_agent(algo, cls, env_id, obs_space, action_space)
        check_fits(algo, cls, env_id, obs_space, action_space)
        return f"{canonical_algo(algo, cls)}{SEP}{env_id}", threshold
    from rlpipe.pipelines.offline import spec_of

    check_offline_capable(algo, cls)
    spec = spec_of(dataset)
    check_fits(algo, cls, f"data set {dataset}", spec.observation_space, spec.action_space)
    threshold = None
    if env_id or spec.env_id:
        threshold = probe_env(env_id or spec.env_id)[2]
    return f"{canonical_algo(algo, cls)}{SEP}{DATASET}{dataset}", threshold
