"""A main for the local-backend test of recurrent collectors (module level, so that a spawned
child can import it): each collector process acts with `CountingPolicy` on
rlpipe/RememberFirst-v0 and sends its rollouts; the learner returns what it received."""
from __future__ import annotations

import numpy as np
from torch import nn

from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import Role, contract, parallel, task
from rlpipe.envs import EnvManager
from rlpipe.middleware import StepCollector
from rlpipe.middleware.exchange import Exchange

from .fakes import CountingPolicy


class ShippedCountingPolicy(CountingPolicy):
    """CountingPolicy with a torch module, so that the exchange has weights to publish."""

    def __init__(self, obs_space, action_space) -> None:
        super().__init__(obs_space, action_space)
        self.net = nn.Linear(1, 1)


def counting_collectors(iterations: int, n_envs: int, n_sample: int) -> list:
    """Learner: the rollouts (lists of per-step records) of `iterations` collector batches, each
    with the name of the collector that sent it; collectors: collect until told to finish."""
    link = parallel.link()
    env = EnvManager("rlpipe/RememberFirst-v0", n_envs=n_envs, seed=link.index or 0, mode="sync",
                     env_kwargs={"length": 4})
    policy = ShippedCountingPolicy(env.observation_space, env.action_space)
    cfg = {"policy": {"collect": {"n_sample": n_sample}}}
    exchange = Exchange(cfg, policy, link, publish_every=1, batches_per_iter=1)
    received: list = []

    @contract(reads=("trajectories",), writes=(), role=Role.LEARNER)
    def keep(ctx: OnlineRLContext) -> None:
        received.append([{k: _copy(v) for k, v in step.items()} for step in ctx.trajectories])

    try:
        with task.start(ctx=OnlineRLContext()):
            task.use(exchange.receive)
            task.use(StepCollector(cfg, policy.collect_mode, env))
            task.use(keep)
            task.use(exchange.send)
            task.run(max_step=iterations if link.role is Role.LEARNER else 10**9)
    finally:
        env.close()
    return received if link.role is Role.LEARNER else None


def _copy(value):
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return np.array(value, copy=True)


LSTM_PPO = dict(seed=0, model=dict(core_size=16, hidden=(16,), obs_norm=True),
                learn=dict(lr=3e-3, epoch_per_collect=2, batch_size=32, chunk_len=8),
                collect=dict(n_sample=32))


def lstm_ppo_batches(iterations: int, seed: int) -> list:
    """LSTM-PPO on CartPoleNoVel (2 envs seeded `seed`, policy seed 0): the learner's GAE
    batches (its rollout storage's arrays, copied) of `iterations` iterations, the weights
    trained between them. In one process (no link) it collects itself; in a distributed run
    the collector process acts and the learner (which returns the batches) trains, with the
    zoo's on-policy exchange. Collectors return None."""
    from rlpipe.middleware import gae_estimator, multistep_trainer
    from rlpipe.policies import PPOLSTMPolicy
    from rlpipe.pipelines.onpolicy import _exchange, resolve_config

    link = parallel.link()
    cfg = resolve_config(PPOLSTMPolicy, dict(policy=LSTM_PPO))
    env = EnvManager("rlpipe/CartPoleNoVel-v1", n_envs=2, seed=seed, mode="sync")
    policy = PPOLSTMPolicy(cfg.policy, env.observation_space, env.action_space)
    exchange = _exchange(cfg, policy, link) if link is not None else None
    batches: list = []

    @contract(reads=("train_data",), writes=(), role=Role.LEARNER)
    def keep(ctx: OnlineRLContext) -> None:
        batches.append(_copy(dict(ctx.train_data["rollout"].data)))

    learner = link is None or link.role is Role.LEARNER
    try:
        with task.start(ctx=OnlineRLContext()):
            if exchange is not None:
                task.use(exchange.receive)
            task.use(StepCollector(cfg, policy.collect_mode, env))
            task.use(gae_estimator(cfg, policy.collect_mode))
            task.use(keep)
            task.use(multistep_trainer(cfg, policy.learn_mode))
            if exchange is not None:
                task.use(exchange.send)
            task.run(max_step=iterations if learner else 10**9)
    finally:
        env.close()
    return batches if learner else None
