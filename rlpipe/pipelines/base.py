"""What every pipeline shares: a pipeline built but not started, the policy built on the
collector env's spaces, the run's seeding, and running one to its summary."""
from __future__ import annotations

import contextlib
import dataclasses
import random
import time
from typing import Any, Callable, Dict, Iterator, Sequence, Tuple

import numpy as np
import torch

from rlpipe.engine import task

from .tail import previous_best, summary


@dataclasses.dataclass
class Pipeline:
    """A pipeline built but not started: the run's first context, how to put its
    middleware on a started task, and the env managers to close afterwards."""

    ctx: Any
    install: Callable[[Any], None]
    """`install(task)`: `task.use(...)` every middleware of the pipeline, in order."""
    envs: Tuple[Any, ...]
    budget_rule: str = "whole collections"
    """How the run's env steps can pass `max_env_step` (the summary names it when they do)."""

    def close(self) -> None:
        """Close the env managers (also when the pipeline never ran)."""
        for env in self.envs:
            env.close()


def named_point(name: str, middleware: Sequence[Any]) -> Tuple[Any, ...]:
    """The middleware a user adds at a pipeline's named point `name`, as a tuple; one
    middleware given where a list belongs is a one-line error."""
    if not isinstance(middleware, (list, tuple)):
        raise TypeError(f"{name}= takes a list of middleware, got {middleware!r}; wrap it in a "
                        f"list: {name}=[...]")
    return tuple(middleware)


@contextlib.contextmanager
def closed_on_error(envs: Tuple[Any, ...]) -> Iterator[None]:
    """Close `envs` if building the rest of the pipeline fails (no env worker is left behind)."""
    try:
        yield
    except BaseException:
        for env in envs:
            env.close()
        raise


def make_policy(cfg: Any, policy_cls: Any, env: Any) -> Any:
    """`policy_cls` on `env`'s spaces; network init and exploration follow the run's seed
    when `policy.seed` is None."""
    if cfg.policy.get("seed", 0) is None:
        cfg.policy.seed = cfg.seed
    if getattr(policy_cls, "multi_agent", False):  # agents are an axis: n_agents, global state
        if not hasattr(env, "n_agents"):
            raise ValueError(f"{policy_cls.__name__} is a multi-agent policy, but env "
                             f"{cfg.env.get('id')!r} is a single-agent env; give it a PettingZoo "
                             "parallel env (a registered name such as 'mpe2/simple_spread_v3' or "
                             "'module:factory'), or use a single-agent algorithm such as ppo")
        return policy_cls(cfg.policy, env.observation_space, env.action_space,
                          n_agents=env.n_agents, state_space=env.state_space)
    return policy_cls(cfg.policy, env.observation_space, env.action_space)


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch for a reproducible run."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def run_pipeline(cfg: Any, build: Callable[[], Pipeline]) -> Dict[str, Any]:
    """Seed, build the pipeline, run it on the global task, close its envs; the run's summary."""
    seed_everything(cfg.seed)
    pipeline = build()
    start = time.perf_counter()
    best = previous_best(cfg)  # a resumed run's best so far
    try:
        with task.start(async_mode=cfg.async_mode, ctx=pipeline.ctx):
            task.on("eval_end", lambda ctx: best.append(ctx.eval_value))
            pipeline.install(task)
            task.run()
            ctx = task.ctx
            profile = task.profile()
            ended_by = task.finish_reason
    finally:
        pipeline.close()
    return summary(cfg, ctx, best, start, profile, pipeline.budget_rule, ended_by)


@dataclasses.dataclass
class DataPath:
    """How an off-policy pipeline gets collected steps into its buffer and batches out of it:
    transitions (`data_pusher`) or sequences for recurrent policies (pipelines/sequence.py)."""

    buffer: Any
    collector_state: Any
    """What the run's resume state saves as the collector's (`get_state`/`set_state`)."""
    install: Callable[[Any], None]
    """`install(task)`: the middleware between the collector and the learner."""
    fetcher: Any = None
    """The learner's fetcher (None: `offpolicy_data_fetcher`)."""
