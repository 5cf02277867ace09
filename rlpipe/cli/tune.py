"""The `rlpipe tune` command (`add_tune_parser`, `run_tune`) and `rlpipe train --config FILE`
(`apply_config_file`). The study itself is `rlpipe/tools/tune.py` (`tune_study`, which
`run_tune` calls); the search spaces `rlpipe/tools/tune_space.py`."""
from __future__ import annotations

import argparse
import logging
import sys
from typing import Any


def add_tune_parser(sub: Any) -> None:
    tune = sub.add_parser(
        "tune", help="search the hyperparameters of a zoo entry or --algo/--env with Optuna "
                     "(TPE, median pruning; resumable); writes best.yaml for train --config")
    tune.add_argument("name", nargs="?", help="zoo entry (see `rlpipe list`)")
    tune.add_argument("--algo", metavar="ALGO", help="instead of an entry: an algorithm ...")
    tune.add_argument("--env", metavar="ENV", help="... on an env")
    tune.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                      help="with --algo/--env: import MODULE first; repeatable")
    tune.add_argument("--trials", type=int, required=True, metavar="N",
                      help="trials in the study (a rerun counts the ones already done)")
    tune.add_argument("--budget", type=int, required=True, metavar="STEPS",
                      help="env steps per trial")
    tune.add_argument("--jobs", type=int, default=1, metavar="K",
                      help="trials run at once, each in a process of its own (default 1)")
    tune.add_argument("--storage", metavar="URL", help="Optuna storage URL (default "
                                                       "sqlite:///DIR/study.db)")
    tune.add_argument("--space", dest="space_file", metavar="FILE",
                      help="YAML file that changes the search space (see docs/after_training.md)")
    tune.add_argument("--seed", type=int, default=0, help="seed of the sampler and of every "
                                                          "trial's run (default 0)")
    tune.add_argument("--out", metavar="DIR", help="the tune folder (default runs/tune/<entry>/): "
                                                   "trial run folders, study.db, best.yaml")
    tune.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                      help="a config value fixed for every trial")
    tune.add_argument("--prune-after", type=int, default=5, metavar="N",
                      help="prune only once N trials completed (default 5)")
    tune.add_argument("--no-prune", dest="prune", action="store_false", help="never prune")
    tune.add_argument("--no-progress", action="store_true", help="no progress bar")


def run_tune(args: argparse.Namespace) -> int:
    """`rlpipe tune`: run the study to --trials (`tune_study`), print the best trials and
    where best.yaml is."""
    from rlpipe.tools.tune import TuneWorkerError, tune_study
    from rlpipe.training import Interrupted

    for handler in logging.getLogger().handlers:  # the trials' INFO lines go to their log.txt
        handler.setLevel(max(handler.level, logging.WARNING))
    try:
        result = tune_study(args.name, algo=args.algo, env=args.env, imports=args.imports,
                            trials=args.trials, budget=args.budget, jobs=args.jobs,
                            storage=args.storage, space=args.space_file, seed=args.seed,
                            out=args.out, overrides=args.overrides,
                            prune_after=args.prune_after, prune=args.prune,
                            progress=not args.no_progress)
    except TuneWorkerError as err:
        print(f"rlpipe tune: error: {err}", file=sys.stderr)
        return 1
    except Interrupted as stop:
        print(f"rlpipe tune: stopped by {stop.signal_name}: the trial that was running is "
              f"marked failed and is tried again when you rerun the same command",
              file=sys.stderr)
        return stop.exit_code
    except KeyboardInterrupt:
        print("rlpipe tune: interrupted; rerun the same command to resume the study",
              file=sys.stderr)
        return 130
    print(result.table())
    print(f"best config: {result.best_yaml}\ntrain it: rlpipe train --config {result.best_yaml}")
    return 0


def apply_config_file(args: argparse.Namespace) -> None:
    """`rlpipe train --config FILE`: what to train and its config from FILE, then --set on top
    (--seed and --max-env-steps over the file's)."""
    from rlpipe.tools.config_file import check_train_config, load_train_config

    if args.resume:
        raise ValueError("--config starts a new run; --resume continues one as it was: drop "
                         "one of them")
    spec = load_train_config(args.config)
    given = [flag for flag, value in (("NAME", args.name), ("--algo", args.algo),
                                      ("--env", args.env)) if value]
    if given:
        raise ValueError(f"--config {args.config} says what to train; drop {given[0]} (or "
                         f"edit the file)")
    args.name, args.algo, args.env = spec["name"], spec["algo"], spec["env"]
    args.imports = [*spec["imports"], *args.imports]
    if args.seed is None:
        args.seed = spec["seed"]
    if args.max_env_steps is None:
        args.max_env_steps = spec["max_env_steps"]
    check_train_config(args.config, spec, args.overrides)
    args.overrides = [*spec["overrides"], *args.overrides]
