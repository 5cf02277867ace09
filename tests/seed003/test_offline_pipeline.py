"""`interaction_evaluator` and `CkptSaver` in an `OfflineRLContext` pipeline, as DI-engine's
offline examples use them (a data fetcher + `trainer`); the guide's lines for both verbatim."""
import pathlib

import numpy as np

from rlpipe import task
from rlpipe.contexts import OfflineRLContext, OnlineRLContext
from rlpipe.data import ReplayBuffer
from rlpipe.engine import contract
from rlpipe.middleware import (CkptSaver, StepCollector, data_pusher, interaction_evaluator,
                               load_checkpoint, trainer)


def random_dataset(cfg, policy, env):
    """A fixed data set: one collection (`n_sample` transitions) of random play."""
    data = ReplayBuffer(cfg.policy.collect.n_sample)
    collect = StepCollector(cfg, policy.collect_mode, env, random_collect_size=10 ** 9)
    ctx = OnlineRLContext()
    gen = collect(ctx)
    next(gen)
    data_pusher(cfg, data)(ctx)
    return data


def tiny_fetcher(dataset, batch_size):
    """Epochs over the data set in shuffled batches: writes train_data and train_epoch."""
    rng = np.random.default_rng(0)
    state = {"order": np.empty(0, np.int64), "epoch": 0}

    @contract(writes=("train_data", "train_epoch"))
    def fetch(ctx):
        if len(state["order"]) < batch_size:
            state["order"] = rng.permutation(len(dataset))
            state["epoch"] += 1
        rows, state["order"] = state["order"][:batch_size], state["order"][batch_size:]
        ctx.train_data = dataset._storage.read(rows)
        ctx.train_epoch = state["epoch"]

    return fetch


def test_offline_pipeline_with_the_guides_evaluator_and_saver_runs_and_saves(dqn):
    cfg, policy, evaluator_env = dqn.cfg, dqn.policy, dqn.evaluator_env
    cfg.env.stop_value = None  # run the whole budget
    cfg.policy.eval.evaluator.eval_freq = 4
    dataset = random_dataset(cfg, policy, dqn.collector_env)
    epochs = []
    with task.start(async_mode=False, ctx=OfflineRLContext()):
        task.use(tiny_fetcher(dataset, 16))
        task.use(trainer(cfg, policy.learn_mode))
        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(CkptSaver(cfg, policy, train_freq=5))
        task.use(lambda ctx: epochs.append(ctx.train_epoch))
        task.run(max_step=10)
        assert task.ctx.train_iter == 10 and task.ctx.last_eval_iter == 10
    assert len(dataset) == 32 and epochs == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]  # 16 rows a batch
    ckpt = pathlib.Path(cfg.run_dir, "ckpt")
    assert {p.name for p in ckpt.glob("*.pt")} >= {"iter_5.pt", "iter_10.pt", "final.pt", "best.pt"}
    final = load_checkpoint(cfg.run_dir, which="final")
    assert final["meta"]["train_iter"] == 10 and final["ctx"]["train_iter"] == 10
    assert "env_step" not in final["ctx"] and "train_epoch" not in final["ctx"]
    policy.load_state_dict(final["policy"])  # the saved weights load back
