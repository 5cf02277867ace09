"""Print (or check) the middleware table of docs/middleware.md from the contracts themselves.

    python scripts/middleware_table.py           # print the table
    python scripts/middleware_table.py --write   # rewrite it in docs/middleware.md
"""
from __future__ import annotations

import pathlib
import sys
import tempfile
import types

import gymnasium as gym
from easydict import EasyDict

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "middleware.md"
BEGIN, END = "<!-- middleware-table:begin -->", "<!-- middleware-table:end -->"


def _examples():
    """One built instance of every library middleware (contracts live on what is built)."""
    import rlpipe.middleware as mw

    run_dir = tempfile.mkdtemp(prefix="rlpipe-table-")
    cfg = EasyDict(run_dir=run_dir, env=dict(stop_value=195.0), ckpt=dict(train_freq=None),
                   policy=dict(collect=dict(n_sample=8, n_episode=1, random_collect_size=0),
                               learn=dict(batch_size=4, update_per_collect=1, nstep=3, gamma=0.9,
                                          gae_lambda=0.95, seq_len=8, burn_in=2, stride=4),
                               other=dict(eps=dict(type="linear", start=1.0, end=0.1, decay=10)),
                               eval=dict(evaluator=dict(eval_freq=10, n_episode=1))))
    class Env:  # stands in for an EnvManager: nothing is stepped
        n_envs, action_space = 1, gym.spaces.Discrete(2)

        def close(self):
            pass

    class Dataset:  # stands in for an OfflineDataset: nothing is sampled
        epoch = 0

        def sample(self, batch_size):
            return {}

        def __len__(self):
            return 4

    env = Env()
    policy = types.SimpleNamespace(state_dict=lambda: {}, forward=lambda *a, **k: {})
    buffer_ = types.SimpleNamespace()
    return {**_examples_of_each_middleware(mw, cfg, env, policy, buffer_),
            "offline_data_fetcher(cfg, dataset)": mw.offline_data_fetcher(cfg, Dataset()),
            **_exchange_examples(mw, cfg, policy)}


def _exchange_examples(mw, cfg, policy):
    """Exchange's two middleware in each role (links to an in-process hub stand in for Ray)."""
    from rlpipe.engine import parallel

    learner, (collector,), evaluator, close = parallel.local_links(collectors=1, evaluator=True)
    try:
        built = {}
        for role, link in (("collector", collector), ("learner", learner),
                           ("evaluator", evaluator)):
            exchange = mw.Exchange(cfg, policy, link)
            built[f"Exchange(cfg, policy).receive ({role})"] = exchange.receive
            built[f"Exchange(cfg, policy).send ({role})"] = exchange.send
        return built
    finally:
        close()


def _examples_of_each_middleware(mw, cfg, env, policy, buffer_):
    return {
        "interaction_evaluator(cfg, policy.eval_mode, env)": mw.interaction_evaluator(cfg, policy, env),
        "envpool_evaluator(cfg, policy.eval_mode, env)": mw.envpool_evaluator(cfg, policy, env),
        "eps_greedy_handler(cfg)": mw.eps_greedy_handler(cfg),
        "inferencer(seed, policy.collect_mode, env)": mw.inferencer(None, policy, env),
        "rolloutor(policy.collect_mode, env)": mw.rolloutor(policy, env),
        "StepCollector(cfg, policy.collect_mode, env)": mw.StepCollector(cfg, policy, env),
        "EpisodeCollector(cfg, policy.collect_mode, env)": mw.EpisodeCollector(cfg, policy, env),
        "nstep_reward_enhancer(cfg)": mw.nstep_reward_enhancer(cfg),
        "priority_calculator(priority_calculation_fn)": mw.priority_calculator(lambda steps: []),
        "data_pusher(cfg, buffer_)": mw.data_pusher(cfg, buffer_),
        "offpolicy_data_fetcher(cfg, buffer_)": mw.offpolicy_data_fetcher(cfg, buffer_),
        "SequenceAdding(cfg)": mw.SequenceAdding(cfg),
        "sequence_pusher(cfg, buffer_)": mw.sequence_pusher(cfg, buffer_),
        "sequence_fetcher(cfg, buffer_)": mw.sequence_fetcher(cfg, buffer_),
        "trainer(cfg, policy.learn_mode)": mw.trainer(cfg, policy),
        "OffPolicyLearner(cfg, policy.learn_mode, buffer_)": mw.OffPolicyLearner(cfg, policy, buffer_),
        "gae_estimator(cfg, policy.collect_mode)": mw.gae_estimator(cfg, policy),
        "multistep_trainer(cfg, policy.learn_mode)": mw.multistep_trainer(cfg, policy),
        "termination_checker(max_env_step=..., max_train_iter=...)":
            mw.termination_checker(max_env_step=1, max_train_iter=1),
        "online_logger(cfg)": mw.online_logger(cfg, tensorboard=False),
        "progress_bar(cfg)": mw.progress_bar(cfg, disable=True),
        "CkptSaver(cfg, policy)": mw.CkptSaver(cfg, policy),
        "overrun_meter()": mw.overrun_meter(),
        "epoch_timer()": mw.epoch_timer(),
        "eps_greedy_masker()": mw.eps_greedy_masker(),
        "offline_logger(cfg)": mw.offline_logger(cfg, tensorboard=False),
        "final_ctx_saver(name)": mw.final_ctx_saver(cfg.run_dir),
        "offline_data_saver(path)": mw.offline_data_saver(cfg.run_dir + "/data.hdf5"),
    }


def table() -> str:
    from rlpipe.engine import contract_of

    rows = ["| middleware | role | reads | reads if the context has them | writes | "
            "reads after `yield` | emits | finishes |",
            "|---|---|---|---|---|---|---|---|"]
    for call, built in _examples().items():
        c = contract_of(built)
        if c is None:
            raise SystemExit(f"{call} has no contract: declare one with @contract")
        fmt = lambda names: ", ".join(f"`{n}`" for n in sorted(names)) or "—"
        role = c.role.value if c.role is not None else "all"
        rows.append(f"| `{call}` | {role} | {fmt(c.reads)} | {fmt(c.optional_reads)} | "
                    f"{fmt(c.writes)} | {fmt(c.reads_after)} | {fmt(c.emits)} | "
                    f"{'yes' if c.finishes else '—'} |")
    return "\n".join(rows)


def current_in_doc() -> str:
    text = DOC.read_text()
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


def main() -> int:
    generated = table()
    if "--write" in sys.argv:
        text = DOC.read_text()
        head, rest = text.split(BEGIN, 1)
        DOC.write_text(head + BEGIN + "\n" + generated + "\n" + END + rest.split(END, 1)[1])
    else:
        print(generated)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
