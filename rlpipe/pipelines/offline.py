"""The offline pipeline: train a policy from a fixed data set, evaluate it in its env.

On an `OfflineRLContext`, the offline form of the off-policy pipeline:

    interaction_evaluator → offline_data_fetcher → trainer → the run's tail (termination at
    max_train_iter, final evaluation, logger, CkptSaver, progress bar over train_iter)

The data set is loaded once (`load_dataset(cfg.dataset.id, seed=cfg.seed)`); the eval env is
`cfg.env.id`, or the env the data set was recorded in; the policy is built on the data set's
spaces, which must fit the env's. One iteration is one update. Checkpoints keep the data set's
sampling state, so `--resume` draws the batches an uninterrupted run would have drawn.
Any policy trains here: the offline algorithms (`pipeline = "offline"`) and the off-policy
ones (DQN, SAC, TD3 on a data set: the usual offline baselines).

`--async` (cfg.parallel: 0 collectors, an evaluator process, local backend): the evaluator
runs in a child process beside the trainer, which publishes its weights every `eval_freq`
updates and takes the evaluations as they come (`Exchange(env_steps=False)`), so evaluating
no longer pauses training. Both processes load the data set (the evaluator for the policy's
spaces and observation statistics). The updates, and so the final weights, are those of the
single-process run; the evaluator process evaluates the newest weights it finds.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence

from easydict import EasyDict

from rlpipe.config import merge_config
from rlpipe.config_checks import check_config
from rlpipe.contexts import OfflineRLContext
from rlpipe.data import OfflineDataError, dataset_spec, load_dataset
from rlpipe.data._minari_io import dataset_root, rebuild_command
from rlpipe.engine import Role, parallel, task
from rlpipe.envs import EnvManager
from rlpipe.middleware import interaction_evaluator, offline_data_fetcher, trainer
from rlpipe.middleware.exchange import Exchange
from rlpipe.runs import changed_data_file, record_data_files, recorded_data_files

from .offpolicy import eval_env_kwargs, mask_settings
from .base import Pipeline, closed_on_error, make_policy, named_point, run_pipeline
from .resume import RunState, resumed_context
from .run_keys import RUN_DEFAULTS
from .tail import run_tail

MAKE_ONE = ("`rlpipe train cartpole-dqn`, then `rlpipe dataset collect runs/cartpole-dqn/<run> "
            "--episodes 50 --eps 0.2 --id {id}` (or `rlpipe dataset collect random --env ENV "
            "--episodes 50 --id {id}`)")


def default_config(policy_cls: Any) -> EasyDict:
    """The full default config of an offline run: run, data set, eval env, logger and
    checkpoint sections, and the policy's own defaults."""
    return EasyDict({**RUN_DEFAULTS["offline"], "policy": policy_cls.config_schema()})


def resolve_config(policy_cls: Any, entry_config: Mapping,
                   user: Optional[Mapping] = None) -> EasyDict:
    """Defaults ← the entry's config ← the user's; unknown keys and values out of range are
    errors. When `env.id` is None and the data set exists, it becomes the data set's env (so
    config.json names the env that `rlpipe eval` evaluates in)."""
    cfg = merge_config(merge_config(default_config(policy_cls), entry_config), user or {})
    if cfg.env.id is None and cfg.dataset.id:
        try:
            cfg.env.id = dataset_spec(cfg.dataset.id).env_id
        except OfflineDataError:
            pass  # a missing data set is reported, with how to make one, when the run starts
    return check_config(cfg, keys=policy_cls.declared_keys("policy."))


def explained(err: OfflineDataError, dataset_id: str) -> OfflineDataError:
    """`err`, when it says the data set is missing, naming the commands that make one."""
    text = str(err)
    if "is not in the Minari root" not in text:
        return err
    from .recipes import RECIPES

    make = (" && ".join(f"`{line}`" for line in RECIPES[dataset_id]) if dataset_id in RECIPES
            else MAKE_ONE.format(id=dataset_id))
    return OfflineDataError(f"{text.split('; make it with')[0]}; make one with {make}")


def spec_of(dataset_id: str) -> Any:
    """`dataset_spec(dataset_id)`, a missing data set explained (`explained`)."""
    try:
        return dataset_spec(dataset_id)
    except OfflineDataError as err:
        raise explained(err, dataset_id) from None


def open_dataset(cfg: Any) -> Any:
    """`cfg.dataset.id` loaded once; a missing one is one line naming the commands that make it."""
    dataset_id = cfg.dataset.id
    if not dataset_id:
        raise OfflineDataError("an offline run needs a data set: pass --dataset ID (or --set "
                               "dataset.id=ID); `rlpipe dataset list` shows the local ones")
    try:
        if cfg.get("run_dir"):  # recorded at the start, compared on resume (by content)
            check_run_data(cfg.run_dir, dataset_id, resuming=bool(cfg.get("resume_from")))
        return load_dataset(dataset_id, seed=cfg.seed)
    except OfflineDataError as err:
        raise explained(err, dataset_id) from None


def make_eval_env(cfg: Any, dataset: Any) -> EnvManager:
    """The evaluator's envs: `cfg.env.id`, else the data set's env; its spaces must be the
    data set's (one line otherwise). In the learner of an `--async` run, one in-process env
    that only checks the spaces (the evaluator process evaluates)."""
    env_cfg = cfg.env
    env_id = env_cfg.id
    if env_id is None and dataset.id:
        env_id = dataset_spec(dataset.id).env_id
    if not env_id:
        raise OfflineDataError(f"data set {dataset.id!r} names no env to evaluate in (it was "
                               f"recorded without a gymnasium spec): pass --env ID (or --set "
                               f"env.id=ID)")
    env_cfg.id = env_id
    common = dict(env_kwargs=eval_env_kwargs(env_cfg), max_restarts=env_cfg.max_restarts,
                  restart_window=env_cfg.restart_window, **mask_settings(env_cfg))
    if task.serves(Role.EVALUATOR):
        env = EnvManager(env_id, n_envs=env_cfg.eval_n_envs, seed=cfg.seed + 10_000,
                         mode=env_cfg.mode, step_timeout=env_cfg.step_timeout, **common)
    else:
        env = EnvManager(env_id, n_envs=1, mode="sync", **common)
    with closed_on_error((env,)):
        dataset.check_spaces(env.observation_space, env.action_space, env_id)
    return env


def normalize_obs(policy: Any, dataset: Any) -> None:
    """A policy that normalises its observations (`set_obs_normalizer(mean, std)`, e.g. TD3+BC)
    gets the data set's per-dimension mean and std before training; its `state_dict` keeps
    them, so `--resume` and `rlpipe eval` use the same statistics."""
    if hasattr(policy, "set_obs_normalizer"):
        policy.set_obs_normalizer(*dataset.obs_stats())


def scale_rewards(policy: Any, dataset: Any) -> None:
    """A policy that may scale its rewards by the data set's return range
    (`set_return_range(min, max)`, IQL with `learn.reward_norm="return_range"`) gets the lowest
    and highest episode return of the data set; its `state_dict` keeps the scale."""
    if hasattr(policy, "set_return_range"):
        returns = dataset.episode_returns
        policy.set_return_range(float(returns.min()), float(returns.max()))


def build_offline(cfg: Any, policy_cls: Any, dataset: Any = None,
                  after_fetcher: Sequence[Any] = (), after_learner: Sequence[Any] = ()) -> Pipeline:
    """Data set, eval env, policy and (resumed) context of the offline pipeline, and its
    middleware: evaluator → offline_data_fetcher → trainer → the run's tail. `dataset`:
    one already loaded (default: `cfg.dataset.id`'s).

    Named points to add middleware at, each a list used in order: `after_fetcher` (they see
    the batch, `ctx.train_data`, before the trainer does) and `after_learner` (after the
    update, before the exchange's send and the run's tail)."""
    after_fetcher = named_point("after_fetcher", after_fetcher)
    after_learner = named_point("after_learner", after_learner)
    dataset = open_dataset(cfg) if dataset is None else dataset
    evaluator_env = make_eval_env(cfg, dataset)
    envs = (evaluator_env,)
    with closed_on_error(envs):
        policy = make_policy(cfg, policy_cls, dataset)  # the data set's spaces
        normalize_obs(policy, dataset)  # resume / --init-from then load the saved statistics
        scale_rewards(policy, dataset)  # (and the saved reward scale)
        evaluating = evaluator_env if task.serves(Role.EVALUATOR) else None  # else: spaces only
        run_state = RunState(cfg.run_dir, None, evaluating, None,
                             dataset=dataset) if cfg.run_dir else None
        ctx = resumed_context(cfg, policy, run_state, OfflineRLContext)
    link = parallel.link()
    exchange = None
    if link is not None:  # --async: this is the learner or the evaluator process
        every = cfg.parallel.publish_every or cfg.policy.eval.evaluator.eval_freq
        exchange = Exchange(cfg, policy, link, publish_every=every, env_steps=False)

    def install(task: Any) -> None:
        if exchange is not None:
            task.use(exchange.receive)
        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(offline_data_fetcher(cfg, dataset))
        for middleware in after_fetcher:
            task.use(middleware)
        task.use(trainer(cfg, policy.learn_mode))
        for middleware in after_learner:
            task.use(middleware)
        if exchange is not None:
            task.use(exchange.send)
        run_tail(task, cfg, policy, run_state)

    return Pipeline(ctx, install, envs)


def run_offline(cfg: Any, policy_cls: Any, after_fetcher: Sequence[Any] = (),
                after_learner: Sequence[Any] = ()) -> Dict[str, Any]:
    """Train `policy_cls` from `cfg.dataset.id` for `cfg.max_train_iter` updates; return the
    summary (the keys of `run_offpolicy`'s, `train_epoch` added). In a process of an
    `--async` run, the chain runs in one thread: the overlap is the evaluator process's, and
    in the learner each middleware needs the one before it (threads would only add hand-offs,
    which cost milliseconds per update on a loaded machine). `after_fetcher`, `after_learner`:
    middleware added at those points (`build_offline`)."""
    if parallel.link() is not None:
        cfg.async_mode = False
    return run_pipeline(cfg, lambda: build_offline(cfg, policy_cls, None, after_fetcher,
                                                   after_learner))


def check_run_data(run_dir: str, dataset_id: str, resuming: bool) -> None:
    """A run starting on data set `dataset_id` records its files (size, SHA-256) in `run_dir`;
    a run resuming refuses data whose content changed since, in one line naming the file and
    the command that rebuilds the data set. A missing data set is left to `load_dataset`."""
    folder = dataset_root() / dataset_id / "data"
    if not folder.is_dir():
        return
    changed = changed_data_file(run_dir, folder) if resuming else None
    if changed is not None:
        path, how = changed
        raise OfflineDataError(
            f"data set {dataset_id!r}: {path} changed since the run in {run_dir} started "
            f"({how}); to resume, put back the data it trained on; or make the data set again "
            f"with `{rebuild_command(dataset_id)}` and start a new run")
    if not resuming or recorded_data_files(run_dir) is None:
        record_data_files(run_dir, dataset_id, folder)
