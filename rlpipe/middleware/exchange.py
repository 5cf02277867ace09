"""Exchange: the middleware that connect the processes of a distributed run.

`Exchange(cfg, policy)` in a process started by `rlpipe.engine.parallel.launch` gives two
middleware for that process's role, `receive` (use it first in the chain) and `send` (use it
after the learner):

- collector: `receive` takes the newest weights, the run's env-step count and the finish flag
  (`on_policy=True`: it first waits for weights newer than those it acted with last, so that
  every rollout comes from the weights the learner trained last and no two from the same);
  `send` queues this iteration's `ctx.trajectories` for the learner, with the weight version it
  acted with, its env-step and episode counts and its name (`collect/samples_from/<name>`);
- learner: `receive` waits for the next collector batch (`batches_per_iter`), sets
  `ctx.trajectories`, `env_step`, `env_episode`, `episode_info`, logs who collects
  (`_workers.WorkerCounts`) and takes the evaluator process's results; `send` puts the policy's weights in the object store as the next version
  every `publish_every` train iterations;
- evaluator: `receive` waits for newer weights and takes the learner's `train_iter` and
  `env_step`; `send` hands each new evaluation to the learner (which finishes the run when it
  reached `stop_value`), with the evaluated weights when they are the best so far, so that the
  learner's best.pt holds exactly the weights that were evaluated.

The end of a run: the learner's `final_evaluation()` asks (event `FINAL_EVAL`) for the weights
it ends with; with an evaluator process, the learner publishes them marked final and waits for
its evaluation of them (unless that process ended the run at stop_value: its last evaluation is
then the run's). The learner logs the evaluator process's evaluations, with its own env step.

DI-engine's `ContextExchanger` and `ModelExchanger(model)` are, in a launched process, the two
halves of an Exchange over that model (end of this module).

A collector acts only with the learner's weights (also after `--resume`). Trajectories pass
through an optional pair of user functions, `compressor(trajectories) -> payload` on the collector and
`decompressor(payload) -> trajectories` on the learner (as TMRL's sample compressor).
"""
from __future__ import annotations

import logging
import math
import threading
import weakref
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional

import torch

from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import Role, contract, current_task
from rlpipe.engine import parallel

from ._cfg import setting
from ._workers import WorkerCounts
from .collector import MODEL_LOADED
from .evaluator import FINAL_EVAL
from .remote_eval import EVALUATIONS, EVALUATOR_EXITS, RemoteEvaluations, TakeEvaluations

log = logging.getLogger(__name__)

WEIGHTS = "weights"
TRAJECTORIES = "trajectories"
_DERIVED = ("acting",)  # rebuilt by collect_mode.refresh() from the shipped networks


def module_weights(policy: Any, modules: Optional[Iterable[str]] = None) -> Dict[str, Dict[str, Any]]:
    """CPU copies of the state dicts of the policy's torch modules named `modules` (default:
    every `torch.nn.Module` attribute except the acting copy and target networks)."""
    if modules is None:
        modules = [name for name, value in vars(policy).items()
                   if isinstance(value, torch.nn.Module) and name not in _DERIVED
                   and "target" not in name]
    weights = {}
    for name in modules:
        module = getattr(policy, name, None)
        if not isinstance(module, torch.nn.Module):
            raise AttributeError(f"Exchange(modules=...): the policy has no torch module "
                                 f"{name!r}; its modules are {_module_names(policy)}")
        weights[name] = {k: v.detach().to("cpu", copy=True) for k, v in module.state_dict().items()}
    if not weights:
        raise AttributeError(f"{type(policy).__name__} has no torch module to ship to other "
                             f"processes; pass Exchange(modules=[...]) naming them")
    return weights


def load_module_weights(policy: Any, weights: Mapping[str, Mapping[str, Any]]) -> None:
    """Load `module_weights()` into the same-named modules, then refresh the acting copy."""
    for name, state in weights.items():
        getattr(policy, name).load_state_dict(state)
    refresh = getattr(getattr(policy, "collect_mode", None), "refresh", None)
    if callable(refresh):
        refresh()


def _module_names(policy: Any) -> List[str]:
    return sorted(n for n, v in vars(policy).items() if isinstance(v, torch.nn.Module))


class _Shared:
    """What the receive and send middleware of one process share."""

    def __init__(self, link: Any, policy: Any, modules: Optional[Iterable[str]]) -> None:
        self.link = link
        self.policy = policy
        self.modules = None if modules is None else list(modules)
        self.version = 0  # weights version this process acts with (learner: last published)
        self.weights: Optional[Dict[str, Any]] = None  # those weights (collector, evaluator)
        self.start_step = 0
        self.start_episode = 0
        self.finished = False  # the hub said the run is over
        self.final = False  # evaluator: the weights it holds are the learner's last ones

    def take(self, update: Any) -> bool:
        """Apply a poll's weights (when newer) and finish flag; True when weights changed."""
        if update.finished:
            self.finished = True
            current_task().finish = True
        if update.value is None:
            return False
        load_module_weights(self.policy, update.value)
        self.version = update.version
        self.weights = update.value
        return True


@contract(reads=("env_step", "env_episode"), writes=("env_step",), role=Role.COLLECTOR,
          finishes=True)
class ReceiveWeights:
    """Collector, first in the chain: newest weights, the run's env-step count, finish.
    `on_policy`: wait for weights newer than the ones it acted with (else only for the first)."""

    def __init__(self, shared: _Shared, on_policy: bool = False) -> None:
        self.s = shared
        self.on_policy = on_policy

    def __call__(self, ctx: OnlineRLContext) -> None:
        s = self.s
        wait = s.version == 0 or self.on_policy
        update = s.link.poll(WEIGHTS, s.version, None if wait else 0.0)
        s.take(update)
        ctx.env_step = max(ctx.env_step, int(update.counters.get("env_step", 0)))
        s.start_step, s.start_episode = ctx.env_step, ctx.env_episode


@contract(reads=("trajectories", "env_step", "env_episode", "episode_info"), writes=(),
          role=Role.COLLECTOR)
class SendTrajectories:
    """Collector, after the collector: this iteration's data to the learner (waits while the
    learner's queue is full)."""

    def __init__(self, shared: _Shared, compressor: Optional[Callable[[Any], Any]]) -> None:
        self.s = shared
        self.compressor = compressor

    def __call__(self, ctx: OnlineRLContext) -> None:
        s = self.s
        steps = ctx.env_step - s.start_step
        episodes = ctx.env_episode - s.start_episode
        data = ctx.trajectories or []
        if s.finished or (not data and steps == 0):
            return
        payload = self.compressor(data) if self.compressor is not None else data
        message = {"data": payload, "env_step": steps, "env_episode": episodes,
                   "episodes": list(ctx.episode_info or []), "version": s.version,
                   "source": s.link.name}
        s.link.push(TRAJECTORIES, [message], {"env_step": steps, "env_episode": episodes})


class ReceiveTrajectories:
    """Learner, first in the chain: wait for the next collector batch (at most
    `batches_per_iter` of them) and count its env steps and episodes; with an evaluator
    process, also take its evaluations. The first call publishes the initial weights."""

    def __init__(self, shared: _Shared, publish: "PublishWeights",
                 decompressor: Optional[Callable[[Any], Any]], batches_per_iter: Optional[int]) -> None:
        self.s = shared
        self.publish = publish
        self.decompressor = decompressor
        self.batches_per_iter = batches_per_iter
        self.remote = RemoteEvaluations(shared.link, publish)
        self.workers = WorkerCounts(shared.link)
        writes = ["trajectories", "env_step", "env_episode", "episode_info", "info_for_logging"]
        if shared.link.evaluator:
            writes += ["eval_value", "eval_output", "last_eval_iter", "last_eval_value",
                       "eval_weights"]
        # it reads no learner field, so in async mode the learner trains while it waits
        contract(reads=("env_step", "env_episode"), writes=writes, role=Role.LEARNER,
                 emits=("eval_end",) if shared.link.evaluator else (), finishes=True)(self)

    def attach(self, task: Any) -> None:
        """Called by `task.use`: with an evaluator process, answer `final_evaluation()`."""
        if self.s.link.evaluator:
            task.on(FINAL_EVAL, lambda ctx: self.remote.final(ctx, task))

    def __call__(self, ctx: OnlineRLContext) -> None:
        s = self.s
        if s.version == 0:  # before anything else: counters of a resumed run, first weights
            s.link.add({"env_step": ctx.env_step, "env_episode": ctx.env_episode})
            self.publish.publish(ctx)
        messages = s.link.pop(TRAJECTORIES, self.batches_per_iter, None)
        if not messages:  # the run was finished (the driver asked, or an evaluator's stop)
            s.finished = True
            current_task().finish = True
        steps: List[Any] = []
        episodes: List[Dict[str, Any]] = []
        for m in messages:
            data = self.decompressor(m["data"]) if self.decompressor is not None else m["data"]
            steps.extend(data if isinstance(data, list) else [data])
            ctx.env_step += int(m["env_step"])
            ctx.env_episode += int(m["env_episode"])
            episodes.extend(m["episodes"])
        ctx.trajectories = steps
        ctx.episode_info = episodes or None
        ctx.info_for_logging = {**ctx.info_for_logging, **self.workers.update(messages, s.version)}
        if s.link.evaluator:
            self.remote.take(ctx)


@contract(reads=("train_iter",), optional_reads=("env_step", "env_episode"), writes=(),
          role=Role.LEARNER)
class PublishWeights:
    """Learner, after the learner: every `every` train iterations put the policy's weights in
    the object store as the next version (collectors pick up the newest one they see)."""

    def __init__(self, shared: _Shared, every: int) -> None:
        self.s = shared
        self.every = every
        self._published_iter = 0
        self._final = False
        self._lock = threading.RLock()  # from reading the final mark to the hub's reply

    def publish(self, ctx: OnlineRLContext, final: bool = False) -> None:
        """Publish the policy's weights now (`final`: the run ends with them; the evaluator
        process evaluates them and stops); once final, every later publication is marked so.
        Locked: in async mode `__call__` and the final request run in two threads of the last
        iteration and the hub keeps only the newest version, so an unmarked one that landed
        after the final one would hide the mark (both processes then wait for each other)."""
        s = self.s
        with self._lock:
            self._final = self._final or final
            info = {"train_iter": int(ctx.train_iter), "final": self._final,
                    **{k: int(getattr(ctx, k)) for k in ("env_step", "env_episode")
                       if hasattr(ctx, k)}}
            s.version = s.link.publish(WEIGHTS, module_weights(s.policy, s.modules), info)
            self._published_iter = ctx.train_iter

    def __call__(self, ctx: OnlineRLContext) -> None:
        with self._lock:  # after a final publication of this train_iter, nothing is due
            if ctx.train_iter - self._published_iter >= self.every:
                self.publish(ctx)


class ReceiveWeightsToEvaluate:
    """Evaluator, first in the chain: wait for weights newer than the last ones, take them
    with the learner's train_iter and env_step at publication (`env_steps=False`: an offline
    run's, whose context counts no env steps)."""

    def __init__(self, shared: _Shared, env_steps: bool = True) -> None:
        self.s = shared
        self.counters = ("env_step", "env_episode") if env_steps else ()
        contract(reads=("train_iter",), writes=("train_iter",) + self.counters,
                 role=Role.EVALUATOR, finishes=True)(self)

    def __call__(self, ctx: OnlineRLContext) -> None:
        update = self.s.link.poll(WEIGHTS, self.s.version, None)
        if self.s.take(update):
            if update.info.get("final"):  # evaluate these (the finish makes it due), then stop
                self.s.final = True
                current_task().finish = True
            ctx.train_iter = int(update.info.get("train_iter", ctx.train_iter))
            for key in self.counters:
                setattr(ctx, key, int(update.info.get(key, getattr(ctx, key))))


@contract(reads=("last_eval_iter", "eval_value", "eval_output", "train_iter"), writes=(),
          role=Role.EVALUATOR)
class SendEvaluation:
    """Evaluator, after the evaluator: each new evaluation to the learner."""

    def __init__(self, shared: _Shared) -> None:
        self.s = shared
        self._sent_iter: Optional[int] = None
        self._best = -math.inf

    def __call__(self, ctx: OnlineRLContext) -> None:
        s = self.s
        if s.finished or ctx.last_eval_iter != ctx.train_iter or ctx.last_eval_iter == self._sent_iter:
            return
        self._sent_iter = ctx.last_eval_iter
        task = current_task()
        message = {"eval_value": float(ctx.eval_value), "eval_output": ctx.eval_output,
                   "train_iter": int(ctx.train_iter), "stop": bool(task.finish) and not s.final}
        if s.final:  # the evaluation of the weights the learner ended with
            message["final"] = True
        if ctx.eval_value > self._best:  # a new best: the learner writes these weights to best.pt
            self._best = float(ctx.eval_value)
            message["weights"] = s.weights
        if not s.link.push(EVALUATIONS, [message], None, None, 5.0):  # never silently
            log.warning("evaluator: the learner took no evaluation for 5 s (queue full); the "
                        "evaluation of train_iter %d is dropped", ctx.train_iter)


class Exchange:
    """The two middleware that connect this process to the others of a distributed run.

    `link`: this process's `rlpipe.engine.parallel.Link` (default: `parallel.link()`; an error
    in a single process). `compressor`/`decompressor`: optional user functions applied to
    `ctx.trajectories` on the collector and to what arrives on the learner. `publish_every`:
    train iterations between weight publications (default `cfg.parallel.publish_every`, else
    `cfg.policy.learn.update_per_collect`). `batches_per_iter`: collector batches the learner
    takes per iteration (default `cfg.parallel.batches_per_iter`, else 1: each learner
    iteration trains on one collector iteration's data, as a single process does; 0 takes all
    that are queued). `modules`: the policy's torch modules to ship (default: all but the
    acting copy and target networks). `on_policy=True` (PPO and other on-policy learners): a
    collector waits, before each rollout, for weights newer than those it acted with, i.e. for
    the learner's update on its previous rollout (with N collectors a rollout is then at most
    N - 1 versions old; without it a collector runs ahead on old weights, and GAE mixes their
    values with the learner's); the learner must publish after every update (`publish_every`
    1), or the collectors would wait forever. `env_steps=False`: a run without env steps or
    collectors (offline, `OfflineRLContext`): the learner's `receive` only publishes the first
    weights and takes the evaluator process's evaluations (`remote_eval.TakeEvaluations`).
    """

    def __init__(self, cfg: Any, policy: Any, link: Any = None,
                 compressor: Optional[Callable[[Any], Any]] = None,
                 decompressor: Optional[Callable[[Any], Any]] = None,
                 publish_every: Optional[int] = None, batches_per_iter: Optional[int] = None,
                 modules: Optional[Iterable[str]] = None, env_steps: bool = True,
                 on_policy: bool = False) -> None:
        link = link if link is not None else parallel.link()
        if link is None:
            raise RuntimeError("Exchange connects the processes of a distributed run, and this "
                               "process was not started by rlpipe.engine.parallel.launch(); in "
                               "a single process leave it out of the pipeline")
        if publish_every is None:
            publish_every = setting(cfg, "parallel.publish_every", None)
        if publish_every is None:
            publish_every = setting(cfg, "policy.learn.update_per_collect", 1)
        if batches_per_iter is None:
            batches_per_iter = setting(cfg, "parallel.batches_per_iter", 1)
        if int(publish_every) < 1:
            raise ValueError(f"publish_every must be >= 1 train iterations, got {publish_every}")
        if int(batches_per_iter) < 0:
            raise ValueError(f"batches_per_iter must be >= 1, or 0 to take all queued batches; "
                             f"got {batches_per_iter}")
        if on_policy and int(publish_every) != 1:
            raise ValueError(f"Exchange(on_policy=True, publish_every={publish_every}): on-policy "
                             f"collectors wait for the weights trained on their previous rollout, "
                             f"so the learner must publish after every update; leave "
                             f"parallel.publish_every at None or 1")
        self.link = link
        shared = _Shared(link, policy, modules)
        self.receive: Callable[[Any], Any]
        self.send: Callable[[Any], Any]
        if not env_steps and (link.collectors or not link.evaluator):
            raise ValueError(f"Exchange(env_steps=False) connects a learner and an evaluator "
                             f"process without collectors (an offline run); this run has "
                             f"{link.collectors} collectors and "
                             f"{'an' if link.evaluator else 'no'} evaluator: launch it with "
                             f"collectors=0, evaluator=True")
        if link.role is Role.COLLECTOR:
            self.receive = ReceiveWeights(shared, on_policy)
            self.send = SendTrajectories(shared, compressor)
        elif link.role is Role.LEARNER:
            publish = PublishWeights(shared, int(publish_every))
            self.receive = (ReceiveTrajectories(shared, publish, decompressor,
                                                int(batches_per_iter) or None) if env_steps
                            else TakeEvaluations(RemoteEvaluations(link, publish)))
            self.send = publish
        else:
            self.receive = ReceiveWeightsToEvaluate(shared, env_steps)
            self.send = SendEvaluation(shared)

    def __repr__(self) -> str:
        return f"<Exchange of the {self.link.name}>"


# DI-engine's exchangers ------------------------------------------------------------------------
# DI-engine's scripts sync a launched process with two middleware: `ContextExchanger` (the
# collectors' trajectories and counters to the learner, its train_iter back) and
# `ModelExchanger(model)` (the learner's weights to the others). In a process started by
# `parallel.launch` the pair is one `Exchange` over the network given to `ModelExchanger`, cut
# where DI-engine cuts it: the context half carries the data, the model half the weights. Both
# follow DI-engine's pace: the learner publishes after every iteration and a collector waits
# for weights newer than those it collected with (`Exchange(on_policy=True)`).

_CONTEXT_KEYS = frozenset({"trajectories", "episodes", "env_step", "env_episode", "train_iter"})


class _ModelHolder:
    """The "policy" whose `model` the exchanger pair ships: the network of ModelExchanger."""

    def __init__(self) -> None:
        self.network: Optional[torch.nn.Module] = None

    @property
    def model(self) -> torch.nn.Module:
        if self.network is None:
            raise RuntimeError("ContextExchanger in a launched process ships the weights of "
                               "ModelExchanger(model), and this pipeline has none: add "
                               "task.use(ModelExchanger(model)) after it")
        return self.network


class _DingPair:
    """The Exchange parts of one launched process's ContextExchanger and ModelExchanger."""

    def __init__(self, link: Any) -> None:
        self.link = link
        self.holder = _ModelHolder()
        self.shared = _Shared(link, self.holder, ["model"])
        self.publish = PublishWeights(self.shared, 1)

    def context(self) -> Callable:
        s, role = self.shared, self.link.role
        if role is Role.LEARNER:  # waits for the next collector batch, first publishes weights
            return ReceiveTrajectories(s, self.publish, None, 1)
        if role is Role.COLLECTOR:
            send = SendTrajectories(s, None)

            @contract(reads_after=("trajectories", "env_step", "env_episode", "episode_info"),
                      role=Role.COLLECTOR)
            def ContextExchanger(ctx: Any) -> Any:  # noqa: N802 - the name DI-engine users see
                yield
                send(ctx)
            return ContextExchanger
        send_eval = SendEvaluation(s)

        @contract(reads_after=("last_eval_iter", "eval_value", "eval_output", "train_iter"),
                  role=Role.EVALUATOR)
        def ContextExchanger(ctx: Any) -> Any:  # noqa: N802
            yield
            send_eval(ctx)
        return ContextExchanger

    def model(self, model: torch.nn.Module) -> Callable:
        self.holder.network = model
        s, role = self.shared, self.link.role
        if role is Role.LEARNER:
            publish = self.publish

            @contract(reads_after=("train_iter", "env_step", "env_episode"), role=Role.LEARNER)
            def ModelExchanger(ctx: Any) -> Any:  # noqa: N802
                yield
                publish.publish(ctx)  # every iteration, trained or not, as DI-engine sends
            return ModelExchanger
        if role is Role.COLLECTOR:
            receive = ReceiveWeights(s, on_policy=True)

            @contract(reads=("env_step", "env_episode"), writes=("env_step",),
                      role=Role.COLLECTOR, finishes=True, emits=(MODEL_LOADED,))
            def ModelExchanger(ctx: Any) -> None:  # noqa: N802
                version = s.version
                receive(ctx)
                if s.version != version:
                    current_task().emit(MODEL_LOADED)
            return ModelExchanger
        return ReceiveWeightsToEvaluate(s)


_PAIRS: "weakref.WeakKeyDictionary[Any, _DingPair]" = weakref.WeakKeyDictionary()


def _pair(link: Any) -> _DingPair:
    """This process's exchanger pair (the two halves share the weight version and counters)."""
    pair = _PAIRS.get(link)
    if pair is None:
        pair = _PAIRS[link] = _DingPair(link)
    return pair


def _single_process(name: str, what: str) -> Callable:
    """In one process there is nothing to sync: a no-op that says so once."""
    log.info("%s: a single-process run shares %s already: this middleware does nothing", name,
             what)

    @contract(role=None)
    def _exchanger(ctx: Any) -> None:
        return None

    _exchanger.__name__ = _exchanger.__qualname__ = name
    return _exchanger


def ContextExchanger(skip_n_iter: int = 1, storage_loader: Any = None) -> Callable:  # noqa: N802
    """DI-engine's context sync: a logged no-op in a single process; in a launched one the
    data half of an Exchange (see above). A collector here waits for weights, not for the
    context, so `skip_n_iter` changes nothing; `storage_loader` (DI-engine's file transport)
    is refused."""
    if storage_loader is not None:
        raise ValueError("ContextExchanger(storage_loader=...): rlpipe ships trajectories "
                         "through the run's hub; to shrink them pass Exchange(cfg, policy, "
                         "compressor=..., decompressor=...) instead")
    current = parallel.link()
    if current is None:
        return _single_process("ContextExchanger", "the context")
    return _pair(current).context()


def ModelExchanger(model: Any, model_loader: Any = None) -> Callable:  # noqa: N802
    """DI-engine's model sync: a logged no-op in a single process; in a launched one the
    weights half of an Exchange over `model` (the network the policy trains)."""
    if model_loader is not None:
        raise ValueError("ModelExchanger(model, model_loader=...): rlpipe ships weights through "
                         "the run's hub; leave model_loader out")
    current = parallel.link()
    if current is None:
        return _single_process("ModelExchanger", "the model's weights")
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"ModelExchanger(model): the model must be the torch.nn.Module the "
                        f"policy trains, got a {type(model).__name__}")
    return _pair(current).model(model)


def context_exchanger(send_keys: Optional[Iterable[str]] = None,
                      recv_keys: Optional[Iterable[str]] = None,
                      skip_n_iter: int = 1) -> Callable:
    """DI-engine's functional ContextExchanger. What each role sends is fixed (collectors:
    trajectories, episodes and counters; the learner: train_iter and env_step), so the keys
    are only checked against it: a key rlpipe does not ship is a one-line error."""
    for arg, keys in (("send_keys", send_keys), ("recv_keys", recv_keys)):
        unknown = sorted(set(keys or ()) - _CONTEXT_KEYS)
        if unknown:
            raise ValueError(f"context_exchanger({arg}=...): rlpipe does not ship {unknown}; "
                             f"the context keys exchanged are {sorted(_CONTEXT_KEYS)}")
    return ContextExchanger(skip_n_iter)


def model_exchanger(model: Any, is_learner: bool = False) -> Callable:
    """DI-engine's functional ModelExchanger; `is_learner` must match this process's role."""
    current = parallel.link()
    if current is not None and bool(is_learner) != (current.role is Role.LEARNER):
        raise ValueError(f"model_exchanger(model, is_learner={is_learner}): this process is the "
                         f"{current.name}; pass is_learner={current.role is Role.LEARNER}")
    return ModelExchanger(model)


__all__ = ["EVALUATOR_EXITS", "ContextExchanger", "Exchange", "ModelExchanger",
           "context_exchanger", "load_module_weights", "model_exchanger", "module_weights"]
