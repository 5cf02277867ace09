"""Zoo entries: the `Entry` record, and finding one by name (or by algorithm and env).

Each entry module declares its record as `ENTRY`; `ENTRIES` names the module of each, imported
only when the entry is asked for, so that `rlpipe list` imports no torch. Running an entry
(`train`, `resume`) lives in `rlpipe/training/`, which asks this module for it."""
from __future__ import annotations

import dataclasses
import difflib
import importlib
import importlib.util
import logging
from types import ModuleType
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from easydict import EasyDict

from rlpipe.config import apply_overrides
from rlpipe.config_checks import check_config
from rlpipe.standard_defaults import explicit_keys

ENTRIES: Dict[str, str] = {
    "cartpole-dqn": "rlpipe.zoo.cartpole.dqn",
    "acrobot-dqn": "rlpipe.zoo.acrobot.dqn",
    "lunarlander-dqn": "rlpipe.zoo.lunarlander.dqn",
    "pong-dqn": "rlpipe.zoo.pong.dqn",
    "breakout-dqn": "rlpipe.zoo.breakout.dqn",
    "pendulum-sac": "rlpipe.zoo.pendulum.sac",
    "pendulum-td3": "rlpipe.zoo.pendulum.td3",
    "lunarlandercontinuous-sac": "rlpipe.zoo.lunarlandercontinuous.sac",
    "hopper-sac": "rlpipe.zoo.hopper.sac",
    "halfcheetah-sac": "rlpipe.zoo.halfcheetah.sac",
    "hopper-td3": "rlpipe.zoo.hopper.td3",
    "cartpole-ppo": "rlpipe.zoo.cartpole.ppo",
    "pendulum-ppo": "rlpipe.zoo.pendulum.ppo",
    "rtpendulum-sac": "rlpipe.zoo.rtpendulum.sac",
    "lunarlander-ppo": "rlpipe.zoo.lunarlander.ppo",
    "pong-ppo": "rlpipe.zoo.pong.ppo",
    "breakout-ppo": "rlpipe.zoo.breakout.ppo",
    "halfcheetah-ppo": "rlpipe.zoo.halfcheetah.ppo",
    "maskedgrid-dqn": "rlpipe.zoo.maskedgrid.dqn",
    "maskedgrid-ppo": "rlpipe.zoo.maskedgrid.ppo",
    "minigrid-doorkey-ppo": "rlpipe.zoo.minigrid.ppo",
    "cartpole-novel-ppo": "rlpipe.zoo.cartpole_novel.ppo",
    "cartpole-novel-ppo-lstm": "rlpipe.zoo.cartpole_novel.ppo_lstm",
    "pendulum-novel-ppo-lstm": "rlpipe.zoo.pendulum_novel.ppo_lstm",
    "minigrid-memory-ppo-lstm": "rlpipe.zoo.minigrid.memory_ppo_lstm",
    "cartpole-novel-r2d2": "rlpipe.zoo.cartpole_novel.r2d2",
    # offline: trained from a data set (`pipeline="offline"`; see rlpipe/pipelines/recipes.py)
    "cartpole-bc": "rlpipe.zoo.cartpole.bc",
    "cartpole-cql": "rlpipe.zoo.cartpole.cql",
    "pendulum-bc": "rlpipe.zoo.pendulum.bc",
    "pendulum-td3bc": "rlpipe.zoo.pendulum.td3bc",
    "pendulum-iql": "rlpipe.zoo.pendulum.iql",
    "pendulum-cql": "rlpipe.zoo.pendulum.cql",
    "hopper-iql": "rlpipe.zoo.hopper.iql",
    "hopper-td3bc": "rlpipe.zoo.hopper.td3bc",
    "simple-spread-mappo": "rlpipe.zoo.simple_spread.mappo",
    "simple-spread-ippo": "rlpipe.zoo.simple_spread.ippo",
    "simple-spread-continuous-mappo": "rlpipe.zoo.simple_spread.continuous_mappo",
    "multiwalker-mappo": "rlpipe.zoo.multiwalker.mappo",
}

# rlpipe's own trainable algorithms and the pipeline of each (the policy class's `pipeline`),
# written out so that `rlpipe list` prints them without importing the policies (and torch);
# tests/zoo/test_cli.py checks it against the policy registry.
BUILT_IN_PIPELINES: Dict[str, str] = {
    "dqn": "off-policy", "r2d2": "off-policy", "sac": "off-policy", "td3": "off-policy",
    "ppo": "on-policy", "ppo-lstm": "on-policy", "mappo": "on-policy", "ippo": "on-policy",
    "bc": "offline", "cql": "offline", "discrete-cql": "offline", "iql": "offline",
    "td3-bc": "offline",
}


class MissingDependencyError(ImportError):
    """An optional dependency of a zoo entry is not installed."""


def require_extra(modules: Iterable[str], what: str, extra: str) -> None:
    """Raise MissingDependencyError, one line naming the extra that installs them, when any of
    the optional packages `modules` is not installed; `what` is the feature that needs them."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        raise MissingDependencyError(f"{what} needs {' and '.join(missing)}, which {verb} not "
                                     f"installed; install it with: pip install \"rlpipe[{extra}]\"")


@dataclasses.dataclass(frozen=True)
class Entry:
    """A zoo entry, declared once: what `rlpipe train NAME` trains and how.

    It trains with `runner(cfg, policy_cls)`, a public pipeline function (e.g.
    `run_offpolicy`), or, for an entry that adds to its pipeline, with `main(cfg)`; both are
    module-level functions, so a distributed run hands them to its processes by reference."""

    name: str
    policy_cls: type
    config: Mapping[str, Any]
    runner: Optional[Callable[[Any, type], Dict[str, Any]]] = None
    main: Optional[Callable[[Any], Dict[str, Any]]] = None
    #: "off-policy", "on-policy" or "offline" (trains on a data set); default: the policy's
    pipeline: str = ""
    #: optional packages it needs: import name -> the rlpipe extra that installs it
    requires: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: the folder under runs/ that its runs go to; default: its name
    run_name: str = ""
    #: `follow_budget(cfg, explicit_keys)`: defaults that follow the budget, for unset keys
    follow_budget: Optional[Callable[[Any, Iterable[str]], None]] = None
    #: `resolve_config(policy_cls, entry_config, user)`; default: its pipeline's
    resolve_config: Optional[Callable[..., EasyDict]] = None
    #: `prepare(cfg)`, run in every process before it trains (e.g. imports the run needs)
    prepare: Optional[Callable[[Any], None]] = None
    #: the row of the table of standard defaults that its config comes from, if any
    standard: Optional[str] = None
    doc: str = ""

    def __post_init__(self) -> None:
        if (self.runner is None) == (self.main is None):
            raise TypeError(f"zoo entry {self.name!r}: give it either runner= (a pipeline "
                            f"function such as run_offpolicy) or main=, not "
                            f"{'both' if self.runner else 'neither'}")
        if not self.pipeline:
            object.__setattr__(self, "pipeline", getattr(self.policy_cls, "pipeline", ""))
        if not self.run_name:
            object.__setattr__(self, "run_name", self.name)

    def resolve(self, user: Optional[Mapping] = None, overrides: Iterable[str] = ()) -> EasyDict:
        """Policy defaults ← entry config ← `user` ← `--set` overrides."""
        resolve = self.resolve_config or _pipeline_resolver(self.pipeline)
        cfg = apply_overrides(resolve(self.policy_cls, self.config, user), list(overrides))
        if self.follow_budget is not None:
            self.follow_budget(cfg, explicit_keys(user, overrides))
        return check_config(cfg, keys=self.policy_cls.declared_keys("policy."))  # --set too

    def check_requirements(self) -> None:
        for module_name, extra in self.requires.items():
            if importlib.util.find_spec(module_name) is None:
                raise MissingDependencyError(
                    f"zoo entry {self.name!r} needs the optional package {module_name!r}; "
                    f"install it with: pip install \"rlpipe[{extra}]\""
                )

    def check_collectors(self, cfg: Any, collectors: int) -> None:
        """`--collectors N` (N > 0) on an entry whose resolved `cfg` has no `parallel` section
        is refused in one line."""
        if collectors and "parallel" not in cfg:
            raise ValueError(f"zoo entry {self.name!r} runs in one process only: --collectors "
                             f"works with the off-policy (DQN, SAC, TD3) and on-policy (PPO, "
                             f"MAPPO, IPPO) entries")

    def drop_stale_stop_value(self, cfg: Any, overrides: Iterable[str]) -> None:
        """`--set env.id=OTHER` keeps a stop value tuned for this entry's env: drop it (one
        warning line) unless `--set env.stop_value=...` sets one for the new env."""
        tuned_for = self.config.get("env", {}).get("id")
        sets_stop = any(o.split("=", 1)[0].strip() == "env.stop_value" for o in overrides)
        if (tuned_for is not None and cfg.env.id != tuned_for and cfg.env.stop_value is not None
                and not sets_stop):
            logging.getLogger("rlpipe").warning(
                "env.id=%s: dropped the stop_value %s that %s tuned for %s (the run uses its "
                "whole budget); set one with --set env.stop_value=V", cfg.env.id,
                cfg.env.stop_value, self.name, tuned_for)
            cfg.env.stop_value = None

    def init_from_settings(self, source: str, with_optim: bool) -> Dict[str, Any]:
        """The settings of a run of this entry that starts from the weights of `source` (a run
        folder: its best.pt, else final.pt; or a checkpoint), and its optimisers too with
        `with_optim`. A source of the same algorithm also gives its model section: the weights
        define the network (an offline run's defaults differ from an online run's)."""
        from rlpipe.pipelines.init_from import pick_checkpoint

        if self.pipeline == "on-policy":
            raise ValueError(f"--init-from: {self.name} is on-policy; --init-from starts "
                             f"off-policy and offline runs (e.g. `--algo sac --env Pendulum-v1 "
                             f"--init-from RUN_DIR`)")
        checkpoint = pick_checkpoint(source)
        settings: Dict[str, Any] = {"init_from": checkpoint, "init_from_optim": bool(with_optim)}
        _, source_cls, plain = _source_run(checkpoint)
        model = (plain.get("policy") or {}).get("model")
        if model is not None and source_cls is self.policy_cls:
            settings["policy"] = {"model": model}
        return settings

    def check_init_from(self, cfg: Any) -> None:
        """Before any run folder exists: the policy class and spaces of the run that
        `cfg.init_from` comes from (its config.json) must fit this run's (one line otherwise)."""
        from rlpipe.pipelines.init_from import check_source

        spaces_of = _generic().spaces_of
        checkpoint = str(cfg.init_from)
        source_name, source_cls, plain = _source_run(checkpoint)
        check_source(checkpoint, (source_cls, *spaces_of(plain), source_name),
                     self.policy_cls, *spaces_of(cfg))

    def run(self, cfg: Any) -> Dict[str, Any]:
        """Train on the resolved `cfg` in this process; returns the run's summary."""
        self.check_requirements()
        return self.job().run(cfg)

    def job(self) -> Any:
        """What this entry trains, as a `Job` (`rlpipe.pipelines.distributed`): it runs in this
        process or pickles to the processes of a distributed run."""
        from rlpipe.pipelines.distributed import Job

        return Job.of(self.name, self.policy_cls, runner=self.runner, main=self.main,
                      prepare=self.prepare, requires=self.requires)


def _source_run(checkpoint: str) -> Tuple[str, type, Dict[str, Any]]:
    """The entry name, policy class and config (plain dicts) of the run that wrote
    `checkpoint`."""
    from rlpipe.runs import RunDir
    from rlpipe.runs.create import read_config

    name, plain = read_config(str(RunDir.of_checkpoint(checkpoint).root))
    return name, get_entry(name, imports=plain.get("imports", ())).policy_cls, plain


def _pipeline_resolver(pipeline: str) -> Callable[..., EasyDict]:
    """The `resolve_config` of pipeline `pipeline` (imported now: it imports torch)."""
    if pipeline == "on-policy":
        from rlpipe.pipelines.onpolicy import resolve_config
    elif pipeline == "offline":
        from rlpipe.pipelines.offline import resolve_config
    else:
        from rlpipe.pipelines.offpolicy import resolve_config
    return resolve_config


def list_entries() -> List[str]:
    return sorted(ENTRIES)


def listed_algorithms(source: str) -> List[str]:
    """rlpipe's own algorithms that train from an env (`source` "online": every pipeline but
    "offline") or from a data set ("offline": the offline and off-policy ones), sorted."""
    wanted = {"online": ("off-policy", "on-policy"), "offline": ("offline", "off-policy")}
    if source not in wanted:
        raise ValueError(f"listed_algorithms(source={source!r}): 'online' or 'offline'")
    return sorted(n for n, pipeline in BUILT_IN_PIPELINES.items() if pipeline in wanted[source])


def _generic() -> ModuleType:
    """`generic.py`, which builds the `ALGO@ENV` entries: imported on first use, by name, as
    the entry modules are (it imports the policies, and torch; like them, it imports this
    module for `Entry`)."""
    return importlib.import_module(f"{__package__}.generic")


def get_entry(name: str, stop_value: Optional[float] = None, imports: Iterable[str] = ()) -> Entry:
    """The zoo entry called `name`; an unknown name is an error listing close matches.

    A name ``ALGO@ENV`` is a generic entry (see `generic.py`): the algorithm's defaults on that
    env, with `stop_value` and `imports` (modules imported first) in its config."""
    if "@" in name:
        return _generic().build_entry(name, stop_value, imports)
    if name not in ENTRIES:
        close = difflib.get_close_matches(name, list(ENTRIES), n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise KeyError(f"unknown zoo entry {name!r}.{hint} `rlpipe list` shows all "
                       f"entries: {', '.join(list_entries())}")
    entry = getattr(importlib.import_module(ENTRIES[name]), "ENTRY", None)
    if not isinstance(entry, Entry) or entry.name != name:
        raise TypeError(f"zoo entry {name!r}: its module {ENTRIES[name]} must end with "
                        f"`ENTRY = Entry(name={name!r}, ...)`, found {entry!r}")
    return entry


def find_entry(name: Optional[str], algo: Optional[str], env: Optional[str],
               imports: Iterable[str] = (), dataset: Optional[str] = None) -> Entry:
    """The entry that `rlpipe train` names: a zoo entry `name`, or the generic entry of
    algorithm `algo` on env `env` or on data set `dataset` (`imports`: modules imported
    first); a wrong combination of them is a one-line error saying which to give."""
    imports = list(imports)
    generic_name = _generic().generic_name
    if dataset is not None:
        if name:
            raise ValueError(f"give a zoo entry ({name!r}) or --algo/--dataset, not both; to "
                             f"change the entry's data set use --set dataset.id={dataset}")
        if not algo:
            raise ValueError("--dataset needs --algo: the algorithm that learns from it (e.g. "
                             "`rlpipe train --algo dqn --dataset cartpole/expert-v0`)")
        generic, stop_value = generic_name(algo, env, imports, dataset=dataset)
        entry = get_entry(generic, stop_value, imports)
        if env:  # the eval env (default: the data set's own)
            entry = dataclasses.replace(entry, config={**entry.config,
                                                       "env": {**entry.config["env"], "id": env}})
        return entry
    if algo is None and env is None:
        if not name:
            raise ValueError("name a zoo entry (`rlpipe train cartpole-dqn`; `rlpipe list` shows "
                             "them), or an algorithm and an env (`--algo ppo --env CartPole-v1`)")
        if imports:
            raise ValueError("--import applies to --algo/--env runs; a zoo entry imports what it "
                             "needs itself")
        return get_entry(name)
    if name:
        raise ValueError(f"give a zoo entry ({name!r}) or --algo/--env, not both; to change the "
                         f"entry's env use --set env.id=ID")
    if not algo or not env:
        missing = "--env" if algo else "--algo"
        raise ValueError(f"{missing} is missing: --algo and --env go together (e.g. "
                         f"`rlpipe train --algo ppo --env CartPole-v1`)")
    generic, stop_value = generic_name(algo, env, imports)
    return get_entry(generic, stop_value, imports)
