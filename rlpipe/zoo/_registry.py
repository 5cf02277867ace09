"""Zoo entries: finding one by name (or by algorithm and env), its config and dependencies.

Running an entry (`train`, `resume`) lives in `_train.py`, which asks this module for it."""
from __future__ import annotations

import dataclasses
import difflib
import importlib
import importlib.util
import logging
from types import ModuleType
from typing import Any, Dict, Iterable, List, Mapping, Optional

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
    # offline: trained from a data set (PIPELINE = "offline"; see rlpipe/pipelines/recipes.py)
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


@dataclasses.dataclass
class Entry:
    """A zoo entry: its name, module, config and `main`."""

    name: str
    module: ModuleType

    @property
    def config(self) -> Mapping:
        return self.module.config

    @property
    def policy_cls(self) -> Any:
        return self.module.POLICY

    @property
    def run_name(self) -> str:
        """The folder under runs/ that its runs go to (a generic entry: `<env>-<algo>`)."""
        return getattr(self.module, "RUN_NAME", self.name)

    @property
    def pipeline(self) -> str:
        """The pipeline that trains it: the module's `PIPELINE` ("offline" for an entry that
        trains on a data set), else its policy class's."""
        return getattr(self.module, "PIPELINE", getattr(self.policy_cls, "pipeline", ""))

    def resolve(self, user: Optional[Mapping] = None, overrides: Iterable[str] = ()) -> EasyDict:
        """Policy defaults ← entry config ← `user` ← `--set` overrides."""
        if self.pipeline == "offline":
            from rlpipe.pipelines.offline import resolve_config
        else:
            from rlpipe.pipelines.offpolicy import resolve_config

        # an entry module may bring its pipeline's own resolve_config (e.g. the on-policy one)
        resolve = getattr(self.module, "resolve_config", resolve_config)
        cfg = apply_overrides(resolve(self.policy_cls, self.config, user), list(overrides))
        follow_budget = getattr(self.module, "follow_budget", None)
        if follow_budget is not None:  # a generic entry's defaults that follow the budget
            follow_budget(cfg, explicit_keys(user, overrides))
        return check_config(cfg)  # --set values in range too

    def check_requirements(self) -> None:
        for module_name, extra in getattr(self.module, "REQUIRES", {}).items():
            if importlib.util.find_spec(module_name) is None:
                raise MissingDependencyError(
                    f"zoo entry {self.name!r} needs the optional package {module_name!r}; "
                    f"install it with: pip install \"rlpipe[{extra}]\""
                )

    def main(self, cfg: Any) -> Dict[str, Any]:
        self.check_requirements()
        return self.module.main(cfg)


def list_entries() -> List[str]:
    return sorted(ENTRIES)


def listed_algorithms(source: str) -> List[str]:
    """rlpipe's own algorithms that train from an env (`source` "online": every pipeline but
    "offline") or from a data set ("offline": the offline and off-policy ones), sorted."""
    wanted = {"online": ("off-policy", "on-policy"), "offline": ("offline", "off-policy")}
    if source not in wanted:
        raise ValueError(f"listed_algorithms(source={source!r}): 'online' or 'offline'")
    return sorted(n for n, pipeline in BUILT_IN_PIPELINES.items() if pipeline in wanted[source])


def get_entry(name: str, stop_value: Optional[float] = None, imports: Iterable[str] = ()) -> Entry:
    """The zoo entry called `name`; an unknown name is an error listing close matches.

    A name ``ALGO@ENV`` is a generic entry (see `_generic.py`): the algorithm's defaults on that
    env, with `stop_value` and `imports` (modules imported first) in its config."""
    from ._generic import build_module, is_generic  # imports the policies (and torch)

    if is_generic(name):
        return Entry(name, build_module(name, stop_value, imports))
    if name not in ENTRIES:
        close = difflib.get_close_matches(name, list(ENTRIES), n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise KeyError(f"unknown zoo entry {name!r}.{hint} `rlpipe list` shows all "
                       f"entries: {', '.join(list_entries())}")
    return Entry(name, importlib.import_module(ENTRIES[name]))


def _drop_stale_stop_value(entry: Entry, cfg: Any, overrides: Iterable[str]) -> None:
    """`--set env.id=OTHER` on an entry keeps a stop value tuned for the entry's env: drop it
    (one warning line) unless `--set env.stop_value=...` sets one for the new env."""
    tuned_for = entry.config.get("env", {}).get("id")
    sets_stop = any(o.split("=", 1)[0].strip() == "env.stop_value" for o in overrides)
    if (tuned_for is not None and cfg.env.id != tuned_for and cfg.env.stop_value is not None
            and not sets_stop):
        logging.getLogger("rlpipe").warning(
            "env.id=%s: dropped the stop_value %s that %s tuned for %s (the run uses its whole "
            "budget); set one with --set env.stop_value=V", cfg.env.id, cfg.env.stop_value,
            entry.name, tuned_for)
        cfg.env.stop_value = None


def _entry_to_train(name: Optional[str], algo: Optional[str], env: Optional[str],
                    imports: List[str], dataset: Optional[str] = None) -> Entry:
    from ._generic import generic_name  # imports the policies (and torch)

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
            entry.module.config["env"]["id"] = env
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
