"""The `rlpipe tune` command (`add_tune_parser`, `run_tune`) and `rlpipe train --config FILE`
(`apply_config_file`). The study itself is `rlpipe/tools/tune.py`; the search spaces
`rlpipe/tools/tune_space.py`."""
from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import signal
import sys
from typing import Any, List, Optional

POLL_S = 1.0
GRACE_S = 5.0
"""After a Ctrl-C, how long a worker may take to stop on its own before it is sent one."""


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
    """`rlpipe tune`: run the study to --trials, write best.yaml, print the best trials."""
    from rlpipe.training import Interrupted
    from rlpipe.tools.tune import (TuneSpec, begin, counted, folder_lock, prepare, table, work,
                                   write_best)

    fields = {f.name for f in dataclasses.fields(TuneSpec)}
    spec = TuneSpec(**{k: v for k, v in vars(args).items() if k in fields})
    study = prepare(spec)
    for handler in logging.getLogger().handlers:  # the trials' INFO lines go to their log.txt
        handler.setLevel(max(handler.level, logging.WARNING))
    with folder_lock(study.out):
        opened = begin(study)
        bar = _bar(spec.trials, counted(opened)[0], not args.no_progress)
        try:
            if spec.jobs == 1:
                work(study, 0, after_trial=lambda o: _advance(bar, o))
            elif (failed := _work_in_processes(study, bar)):
                print(f"rlpipe tune: error: tune worker(s) {', '.join(failed)} stopped with an "
                      f"error (its traceback is above); rerun the same command to resume the "
                      f"study", file=sys.stderr)
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
        finally:
            if bar is not None:
                bar.close()
        opened = study.open()
        path = write_best(study, opened)
    print(table(opened))
    print(f"best config: {path}\ntrain it: rlpipe train --config {path}")
    return 0


def _bar(total: int, done: int, show: bool) -> Optional[Any]:
    if not show:
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=min(done, total), desc="trials", unit="trial",
                dynamic_ncols=True)


def _advance(bar: Optional[Any], opened: Any) -> None:
    from rlpipe.tools.tune import counted

    if bar is None:
        return
    done, running = counted(opened)
    bar.n = min(done, bar.total)
    try:
        bar.set_postfix(best=f"{opened.best_value:.2f}", running=running)
    except ValueError:  # no complete trial yet
        bar.set_postfix(running=running)


def _work_in_processes(study: Any, bar: Optional[Any]) -> List[str]:
    """--jobs K: K worker processes claim and run trials; this one draws the bar. The workers
    that failed (name and exit code)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    plain = dataclasses.asdict(study.spec)
    workers = [context.Process(target=_worker, args=(plain, i), name=f"rlpipe-tune-{i}")
               for i in range(study.spec.jobs)]
    for w in workers:
        w.start()
    opened = study.open()
    try:
        while any(w.is_alive() for w in workers):
            workers[0].join(POLL_S)
            _advance(bar, opened)
    except KeyboardInterrupt:  # let the workers finish their iteration and mark their trials
        for w in workers:  # a Ctrl-C in a terminal reached them too; a `kill -INT` did not
            w.join(GRACE_S)
            if w.is_alive():
                os.kill(w.pid, signal.SIGINT)
        for w in workers:
            w.join()
        raise
    _advance(bar, opened)
    stopped = [w for w in workers if w.exitcode == 130]
    if stopped:
        raise KeyboardInterrupt
    return [f"{w.name} (exit code {w.exitcode})" for w in workers if w.exitcode != 0]


def _worker(plain: dict, index: int) -> None:
    """One --jobs process: one torch thread, trials until the study has its count."""
    import torch

    from rlpipe.training import Interrupted
    from rlpipe.tools.tune import TuneSpec, prepare, work

    torch.set_num_threads(1)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:  # the trials' INFO lines go to their log.txt
        handler.setLevel(logging.WARNING)
    try:
        work(prepare(TuneSpec(**plain)), index)
    except (Interrupted, KeyboardInterrupt):
        sys.exit(130)


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
