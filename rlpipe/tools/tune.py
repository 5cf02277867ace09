"""`rlpipe tune`: the study (Optuna, in SQLite in the tune folder by default) and its trials;
`tune_study(...)` runs one to its trial count and returns its best trial (`TuneResult`).

Each trial is a normal run folder (`DIR/trials/trial-NNNN/`) trained by `train()` with the
trial's values as `--set` overrides and the tuning budget. Every evaluation the run's evaluator
makes is reported to the trial (step = the evaluation's index: 0 is the untrained policy); when
the pruner (median of the earlier trials at that evaluation) says so, the run finishes its
iteration and checkpoints, its folder gets `tune.json` saying it was pruned, and the trial is
PRUNED. The objective is the run's final evaluation return.

Resuming: rerunning the same command opens the same study. A trial left RUNNING by a tune
that was stopped (killed, or Ctrl-C) is marked FAIL and its values are tried again first.
Interrupted trials (FAIL without an `error` user attribute) do not count toward `--trials`;
complete, pruned and failed ones (FAIL with the error) do. One tune at a time per folder (a
lock file); its worker processes claim trials under a second lock, so a study never runs more
than `--trials`.

The function is `tune_study`, not `tune`: `rlpipe.tools.tune` is this module, and a package
attribute cannot be both.
"""
from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import importlib.util
import json
import logging
import math
import multiprocessing
import os
import signal
import sys
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

from rlpipe.runs import atomic_write_json
from rlpipe.zoo.registry import Entry, find_entry

from .config_file import as_override, write_train_config
from .tune_space import Space, space_for

log = logging.getLogger("rlpipe")
TUNE_FILE = "tune.json"
"""In each trial's run folder: the trial's number, state and values."""
WARMUP_EVALS = 1
"""Evaluations never pruned on: the first one is of the untrained policy."""
POLL_S = 1.0
"""With --jobs K: how often the progress bar is redrawn while the workers run."""
GRACE_S = 5.0
"""After a Ctrl-C, how long a worker may take to stop on its own before it is sent one."""


@dataclasses.dataclass
class TuneSpec:
    """What `rlpipe tune` was asked (plain values: it is shipped to worker processes)."""

    name: Optional[str]
    algo: Optional[str]
    env: Optional[str]
    imports: List[str]
    trials: int
    budget: int
    jobs: int = 1
    storage: Optional[str] = None
    space_file: Optional[str] = None
    seed: int = 0
    out: Optional[str] = None
    overrides: List[str] = dataclasses.field(default_factory=list)
    prune_after: int = 5
    prune: bool = True


@dataclasses.dataclass
class Study:
    """A spec made concrete: the entry, its space, the tune folder and the storage URL."""

    spec: TuneSpec
    entry: Entry
    space: Space
    out: str
    storage: str
    study_name: str

    @property
    def trials_dir(self) -> str:
        return os.path.join(self.out, "trials")

    def open(self, worker: int = 0) -> Any:
        """The Optuna study (created on first use): TPE seeded from (`seed`, `worker`, the
        trials the study holds: a resumed study does not replay its first random samples),
        median pruning after `prune_after` complete trials."""
        import numpy as np
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        pruner = (optuna.pruners.MedianPruner(n_startup_trials=self.spec.prune_after,
                                              n_warmup_steps=WARMUP_EVALS)
                  if self.spec.prune else optuna.pruners.NopPruner())
        storage: Any = self.storage
        if storage.startswith("sqlite:"):  # several processes: wait for the file lock
            storage = optuna.storages.RDBStorage(
                storage, engine_kwargs={"connect_args": {"timeout": 120}})
        opened = optuna.create_study(storage=storage, study_name=self.study_name,
                                     direction="maximize", pruner=pruner, load_if_exists=True)
        held = len(opened.get_trials(deepcopy=False))
        seed = int(np.random.SeedSequence([self.spec.seed, worker, held]).generate_state(1)[0])
        opened.sampler = optuna.samplers.TPESampler(seed=seed)
        return opened


def prepare(spec: TuneSpec) -> Study:
    """Check the arguments (one line for each mistake) before anything is written."""
    if spec.trials < 1:
        raise ValueError(f"--trials must be at least 1, got {spec.trials}")
    if spec.budget <= 0:
        raise ValueError(f"--budget must be a positive number of env steps per trial, got "
                         f"{spec.budget}")
    if spec.jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {spec.jobs}")
    if spec.prune_after < 0:
        raise ValueError(f"--prune-after must be >= 0, got {spec.prune_after}")
    if importlib.util.find_spec("optuna") is None:
        from rlpipe.zoo.registry import MissingDependencyError

        raise MissingDependencyError('rlpipe tune needs the optional package optuna; install it '
                                     'with: pip install "rlpipe[tune]"')
    entry = find_entry(spec.name, spec.algo, spec.env, list(spec.imports))
    entry.check_requirements()
    if entry.pipeline == "offline":
        raise ValueError(f"{entry.name} trains offline; rlpipe tune tunes online entries (its "
                         f"budget is env steps)")
    from rlpipe.policies.registry import registered_name

    algo = registered_name(entry.policy_cls)
    space = space_for(algo, spec.space_file)
    entry.resolve({"max_env_step": spec.budget}, spec.overrides)  # --set errors now
    out = spec.out or os.path.join("runs", "tune", entry.run_name)
    storage = spec.storage or f"sqlite:///{os.path.abspath(os.path.join(out, 'study.db'))}"
    return Study(spec, entry, space, out, storage, entry.run_name)


def setup_record(study: Study) -> Dict[str, Any]:
    """What a resumed study must have been made with (the trial count and jobs may change)."""
    spec = study.spec
    return {"target": study.entry.name, "budget": spec.budget, "seed": spec.seed,
            "overrides": list(spec.overrides), "space": study.space.describe()}


@contextlib.contextmanager
def folder_lock(out: str) -> Iterator[None]:
    """One `rlpipe tune` per tune folder: a second one is refused in one line."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, ".lock"), "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(f"another rlpipe tune is running in {out}; wait for it, or give "
                             f"this one another --out") from None
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def begin(study: Study) -> Any:
    """Open (or create) the study under the folder lock: check it was made with these
    arguments, enqueue the space file's first trials (new study), retry interrupted trials."""
    from optuna.trial import TrialState

    opened = study.open()
    record = setup_record(study)
    made = opened.user_attrs.get("rlpipe")
    if made is None:
        opened.set_user_attr("rlpipe", record)
        for params in study.space.enqueue:
            opened.enqueue_trial(params)
    elif made != record:
        diff = next(k for k in record if record[k] != made.get(k))
        raise ValueError(f"the study in {study.storage} was made with {diff} "
                         f"{json.dumps(made.get(diff))}, not {json.dumps(record[diff])}: rerun "
                         f"with the same arguments to resume it, or give another --out")
    for stale in opened.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        opened.tell(stale.number, state=TrialState.FAIL, skip_if_finished=True)
        opened.enqueue_trial(stale.params, user_attrs={"retry_of": stale.number})
        log.warning("trial %d was interrupted (its tune stopped): marked failed; its values "
                    "are tried again", stale.number)
    return opened


def counted(opened: Any) -> Tuple[int, int]:
    """(trials that count toward --trials, trials running now)."""
    from optuna.trial import TrialState

    done = running = 0
    for t in opened.get_trials(deepcopy=False):
        if t.state == TrialState.RUNNING:
            running += 1
        elif t.state in (TrialState.COMPLETE, TrialState.PRUNED) or (
                t.state == TrialState.FAIL and "error" in t.user_attrs):
            done += 1
    return done, running


def claim(study: Study, opened: Any) -> Optional[Any]:
    """The next trial, or None when --trials are done or running (under a lock: workers of
    one tune never start more)."""
    with open(os.path.join(study.out, ".claim"), "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            done, running = counted(opened)
            if done + running >= study.spec.trials:
                return None
            return opened.ask()
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


class EvalReporter:
    """An `eval_end` listener: reports each evaluation to the trial, and finishes the run
    (after its iteration, checkpointed) when the pruner says so."""

    def __init__(self, trial: Any, task: Any) -> None:
        self.trial, self.task = trial, task
        self.evals = 0
        self.pruned: Optional[Dict[str, Any]] = None

    def __call__(self, ctx: Any) -> None:
        if self.pruned is not None:
            return
        step, value = self.evals, float(ctx.eval_value)
        self.evals += 1
        if not math.isfinite(value):
            return
        self.trial.report(value, step)
        if self.trial.should_prune():
            self.pruned = {"eval": step, "value": value, "env_step": getattr(ctx, "env_step", None)}
            log.warning("tune: trial %d pruned at evaluation %d (return %.2f, below the median "
                        "of the earlier trials there); the run stops after this iteration",
                        self.trial.number, step, value)
            self.task.end_run(f"pruned by tune at evaluation {step} (return {value:.2f}, below "
                              f"the median of the earlier trials there)")


def run_trial(study: Study, opened: Any, trial: Any) -> str:
    """Train one trial and tell the study how it ended; its state's name."""
    from optuna.trial import TrialState

    from rlpipe.engine import task

    from rlpipe.training import Interrupted, train

    spec = study.spec
    values = study.space.sample(trial)
    base = study.entry.resolve({"max_env_step": spec.budget}, spec.overrides)
    sets = study.space.overrides(values, base, spec.budget)
    run_dir = os.path.join(study.trials_dir, f"trial-{trial.number:04d}")
    trial.set_user_attr("config", json.loads(json.dumps(sets, default=list)))
    trial.set_user_attr("run_dir", run_dir)
    record = {"trial": trial.number, "study": study.storage, "values": values, "config": sets}
    reporter = EvalReporter(trial, task)
    task.on("eval_end", reporter)
    try:
        result = train(spec.name, seed=spec.seed, run_dir=run_dir, max_env_step=spec.budget,
                       progress=False, algo=spec.algo, env=spec.env, imports=spec.imports,
                       overrides=[*spec.overrides, *(as_override(k, v) for k, v in sets.items())])
    except (Interrupted, KeyboardInterrupt):  # KeyboardInterrupt: Ctrl-C as the run started
        _write_record(run_dir, {**record, "state": "interrupted"})
        trial.set_user_attr("interrupted", True)
        opened.tell(trial, state=TrialState.FAIL)
        opened.enqueue_trial(trial.params, user_attrs={"retry_of": trial.number})
        raise
    except Exception as err:  # a diverged or ill-fitting trial: recorded, the study goes on
        message = f"{type(err).__name__}: {' '.join(str(err).split())}"
        log.warning("tune: trial %d failed: %s", trial.number, message)
        if os.path.isdir(run_dir):
            _write_record(run_dir, {**record, "state": "failed", "error": message})
        trial.set_user_attr("error", message)
        opened.tell(trial, state=TrialState.FAIL)
        return "failed"
    finally:
        task.off("eval_end", reporter)
    if reporter.pruned is not None:
        _write_record(run_dir, {**record, "state": "pruned", "pruned": reporter.pruned})
        opened.tell(trial, state=TrialState.PRUNED)
        return "pruned"
    value = result.get("eval_value")
    if value is None:
        _write_record(run_dir, {**record, "state": "failed", "error": "no final evaluation"})
        trial.set_user_attr("error", "the run made no final evaluation")
        opened.tell(trial, state=TrialState.FAIL)
        return "failed"
    _write_record(run_dir, {**record, "state": "complete", "value": value})
    opened.tell(trial, float(value))
    return "complete"


def _write_record(run_dir: str, record: Dict[str, Any]) -> None:
    os.makedirs(run_dir, exist_ok=True)
    atomic_write_json(os.path.join(run_dir, TUNE_FILE), json.loads(json.dumps(record, default=list)))


def work(study: Study, worker: int = 0, after_trial: Any = None) -> None:
    """Claim and run trials until --trials are done (one worker: a process of its own with
    --jobs > 1, else the tune process)."""
    opened = study.open(worker)
    while (trial := claim(study, opened)) is not None:
        run_trial(study, opened, trial)
        if after_trial is not None:
            after_trial(opened)


@dataclasses.dataclass
class TuneResult:
    """What a study found: its best complete trial and the best.yaml that trains it again."""

    trial: int
    """The best trial's number (its run folder is `run_dir`)."""
    value: float
    """Its final evaluation return, the study's objective."""
    config: Dict[str, Any]
    """The config keys it trained with (dotted, as in best.yaml's `config:`): the sampled
    values as applied and the study's fixed `overrides`."""
    best_yaml: str
    """best.yaml: what `rlpipe train --config` or `load_train_config` reads."""
    run_dir: str
    """The best trial's run folder."""
    study: Any
    """The Optuna study, every trial of it included (`study.trials`)."""

    def table(self, top: int = 10) -> str:
        """The `top` best trials, one row each, as `rlpipe tune` prints them."""
        return table(self.study, top)


class TuneWorkerError(RuntimeError):
    """A `jobs > 1` worker process stopped with an error (its traceback is on stderr)."""


def tune_study(name: Optional[str] = None, *, trials: int, budget: int,
               algo: Optional[str] = None, env: Optional[str] = None,
               imports: Iterable[str] = (), jobs: int = 1, storage: Optional[str] = None,
               space: Optional[str] = None, seed: int = 0, out: Optional[str] = None,
               overrides: Iterable[str] = (), prune_after: int = 5, prune: bool = True,
               progress: bool = True) -> TuneResult:
    """Tune zoo entry `name` (or `algo` on `env`) with `trials` trials of `budget` env steps
    each, write best.yaml in the tune folder `out` (default runs/tune/<entry>/) and return the
    best trial: the scripting form of `rlpipe tune` (each argument is its option of that name;
    `space` is a space file).

    Calling it again with the same arguments resumes the study. The arguments are checked
    before anything is written (ValueError, one line each). A trial stopped by SIGINT/SIGTERM
    raises the run's `Interrupted`, a Ctrl-C with `jobs > 1` KeyboardInterrupt; either way the
    running trials are marked failed and tried again on the next call. With `jobs > 1` the
    workers are spawned processes, so a script calls this under ``if __name__ == "__main__":``.
    """
    spec = TuneSpec(name, algo, env, list(imports), trials, budget, jobs, storage, space, seed,
                    out, list(overrides), prune_after, prune)
    study = prepare(spec)
    with folder_lock(study.out):
        opened = begin(study)
        bar = _bar(spec.trials, counted(opened)[0], progress)
        try:
            if spec.jobs == 1:
                work(study, 0, after_trial=lambda o: _advance(bar, o))
            else:
                _work_in_processes(study, bar)
        finally:
            if bar is not None:
                bar.close()
        return write_best(study, study.open())


def write_best(study: Study, opened: Any) -> TuneResult:
    """best.yaml: the best complete trial's config, loadable by `rlpipe train --config`; the
    result names the trial and the file."""
    from optuna.trial import TrialState

    complete = opened.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if not complete:
        done, _ = counted(opened)
        raise ValueError(f"no trial of the study in {study.out} completed ({done} pruned or "
                         f"failed): see their run folders' log.txt and tune.json under "
                         f"{study.trials_dir}")
    best = opened.best_trial
    spec = study.spec
    resolved = study.entry.resolve({"max_env_step": spec.budget}, spec.overrides)
    fixed = {o.split("=", 1)[0].strip(): _lookup(resolved, o.split("=", 1)[0].strip())
             for o in spec.overrides}
    config = {**fixed, **best.user_attrs.get("config", {})}
    target = ({"entry": spec.name} if spec.name else
              {"algo": spec.algo, "env": spec.env, "imports": list(spec.imports)})
    path = os.path.join(study.out, "best.yaml")
    header = (f"rlpipe tune: the best of {len(complete)} complete trials of {study.entry.name} "
              f"(trial {best.number}, final eval return {best.value:.2f},\n"
              f"{spec.budget} env steps, seed {spec.seed}; run folder "
              f"{best.user_attrs.get('run_dir')}). Train it with:\n"
              f"  rlpipe train --config {path}")
    write_train_config(path, {**target, "seed": spec.seed, "max_env_steps": spec.budget}, config,
                       header)
    return TuneResult(best.number, float(best.value), config, path,
                      best.user_attrs.get("run_dir"), opened)


def _bar(total: int, done: int, show: bool) -> Optional[Any]:
    if not show:
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=min(done, total), desc="trials", unit="trial",
                dynamic_ncols=True)


def _advance(bar: Optional[Any], opened: Any) -> None:
    if bar is None:
        return
    done, running = counted(opened)
    bar.n = min(done, bar.total)
    try:
        bar.set_postfix(best=f"{opened.best_value:.2f}", running=running)
    except ValueError:  # no complete trial yet
        bar.set_postfix(running=running)


def _work_in_processes(study: Study, bar: Optional[Any]) -> None:
    """jobs K: K worker processes claim and run trials; this one draws the bar."""
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
    if any(w.exitcode == 130 for w in workers):
        raise KeyboardInterrupt
    failed = [f"{w.name} (exit code {w.exitcode})" for w in workers if w.exitcode != 0]
    if failed:
        raise TuneWorkerError(f"tune worker(s) {', '.join(failed)} stopped with an error (its "
                              f"traceback is above); rerun the same tune to resume the study")


def _worker(plain: Dict[str, Any], index: int) -> None:
    """One jobs process: one torch thread, trials until the study has its count."""
    import torch

    from rlpipe.training import Interrupted

    torch.set_num_threads(1)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:  # the trials' INFO lines go to their log.txt
        handler.setLevel(logging.WARNING)
    try:
        work(prepare(TuneSpec(**plain)), index)
    except (Interrupted, KeyboardInterrupt):
        sys.exit(130)


def _lookup(cfg: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        cfg = cfg[part]
    return cfg


def table(opened: Any, top: int = 10) -> str:
    """The best trials (complete ones by final return, pruned ones by their last reported
    return, then failed and interrupted ones), one row each."""
    from optuna.trial import TrialState

    rows = []
    for t in opened.get_trials(deepcopy=False):
        if t.state == TrialState.COMPLETE:
            rows.append((0, -t.value, t, f"{t.value:.2f}"))
        elif t.state == TrialState.PRUNED:
            last = t.intermediate_values.get(t.last_step) if t.last_step is not None else None
            rows.append((1, -(last if last is not None else -math.inf), t,
                         "-" if last is None else f"({last:.2f})"))
        elif t.state == TrialState.FAIL:
            rows.append((2, 0.0, t, "-"))
    rows.sort(key=lambda r: (r[0], r[1]))
    lines = [f"{'trial':>5}  {'state':8}  {'return':>9}  {'evals':>5}  config (as trained)"]
    for _, _, t, shown in rows[:top]:
        values = ", ".join(f"{k}={_short(v)}" for k, v in sorted(_applied(t).items()))
        state = t.state.name.lower() if "error" in t.user_attrs or t.state != TrialState.FAIL \
            else "stopped"
        lines.append(f"{t.number:>5}  {state:8}  {shown:>9}  "
                     f"{len(t.intermediate_values):>5}  {values}")
    return "\n".join(lines)


def _applied(trial: Any) -> Dict[str, Any]:
    """The config keys a trial trained with (``policy.`` left off), as `best.yaml` gets them:
    a sampled value can be converted or capped on the way (rl-zoo's train_freq becomes n_sample
    and update_per_collect, learning_starts is capped at half the budget); the sampled values
    themselves where the trial never reached training."""
    config = trial.user_attrs.get("config")
    if not config:
        return dict(trial.params)
    return {k[len("policy."):] if k.startswith("policy.") else k: v for k, v in config.items()}


def _short(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)
