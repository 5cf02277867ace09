"""Port of DI-engine's `apex_dqn_ddp.py`, in its structure: one DQN script with prioritized
replay, run as several ranks by torchrun; `DDPContext` joins them and `to_ddp_config` gives each
rank its share of the batch. Only the imports and the construction of the config, envs, model
and buffer are rlpipe's (`PrioritizedReplayBuffer` for `DequeBuffer` +
`PriorityExperienceReplay`). Run by tests/dingengine/test_apex_dqn_ddp.py as

    torchrun --standalone --nproc_per_node=2 apex_dqn_ddp_port.py CONFIG.json OUT_DIR

where CONFIG.json is a plain run config (`get_entry("cartpole-dqn").resolve()` with the test's
changes); each rank writes what it ended with to OUT_DIR/rank<r>.pt for the test to compare."""
import json
import logging
import os
import signal
import sys

import torch
from easydict import EasyDict

from rlpipe import DDPContext, get_rank, set_pkg_seed, task, to_ddp_config
from rlpipe.contexts import OnlineRLContext
from rlpipe.data import PrioritizedReplayBuffer
from rlpipe.envs import EnvManager
from rlpipe.middleware import (CkptSaver, ModelExchanger, OffPolicyLearner, StepCollector,
                               data_pusher, eps_greedy_handler, interaction_evaluator,
                               termination_checker)
from rlpipe.models import QNetwork
from rlpipe.policies import DQNPolicy


def sigkill_after(train_iter):
    """A middleware that kills its own process (SIGKILL) once the policy has made `train_iter`
    updates: a rank lost mid-run, as the out-of-memory killer would take it."""
    def kill(ctx):
        if ctx.train_iter >= train_iter:
            os.kill(os.getpid(), signal.SIGKILL)
    return kill


def main(main_config, out_dir):
    logging.basicConfig(level=logging.INFO)  # DI-engine's logging has a console handler
    main_config.exp_name = main_config.get("exp_name") or 'cartpole_dqn_per'
    cfg = main_config
    with task.start(async_mode=cfg.get("async_mode", False), ctx=OnlineRLContext()):
        collector_env = EnvManager(cfg.env.id, n_envs=cfg.env.n_envs, seed=cfg.seed)
        evaluator_env = EnvManager(cfg.env.id, n_envs=cfg.env.eval_n_envs, seed=cfg.seed)

        set_pkg_seed(cfg.seed, use_cuda=False)

        model = QNetwork(collector_env.observation_space, collector_env.action_space.n,
                         **cfg.policy.model)
        buffer_ = PrioritizedReplayBuffer(cfg.replay.capacity, alpha=cfg.replay.alpha,
                                          beta=cfg.replay.beta)
        policy = DQNPolicy(cfg.policy, model=model)

        task.use(ModelExchanger(model))
        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(eps_greedy_handler(cfg))
        task.use(StepCollector(cfg, policy.collect_mode, collector_env))
        task.use(data_pusher(cfg, buffer_))
        task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
        task.use(CkptSaver(policy, cfg.exp_name, train_freq=100))
        doomed = (cfg.get("sigkill_at_train_iter") or {}).get(str(get_rank()))
        if doomed:  # the fault test: this rank's process dies mid-run (kill -9)
            task.use(sigkill_after(doomed))
        budget = cfg.get("max_env_step")  # the test's budget (one, or one per rank); the
        if isinstance(budget, list):       # example runs to the stop value
            budget = budget[get_rank()]
        if budget:
            task.use(termination_checker(max_env_step=budget))
        task.run()
        torch.save({"online": policy.online.state_dict(), "train_iter": policy.train_iter,
                    "env_step": task.ctx.env_step, "eval_value": task.ctx.eval_value,
                    "finish_reason": task.finish_reason, "batch_size": cfg.policy.learn.batch_size,
                    "seed": cfg.seed},
                   f"{out_dir}/rank{get_rank()}.pt")
    collector_env.close()
    evaluator_env.close()


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        main_config = EasyDict(json.load(f))
    with DDPContext():
        main_config = to_ddp_config(main_config)
        main(main_config, sys.argv[2])
