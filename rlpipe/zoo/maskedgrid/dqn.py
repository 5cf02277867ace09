"""DQN on rlpipe/MaskedGrid-v0 with action masks: solves it (eval return 1) within 20k env steps.

The env's mask (info["action_mask"]) makes the acting greedy and ε-random over valid moves only
and the target maximise over the next cell's valid moves. `--set env.env_kwargs.expose_mask=False`
hides the mask: the agent then has to learn the walls from the −1 of an invalid move.
"""
from typing import Any, Dict

from rlpipe.policies import DQNPolicy
from rlpipe.pipelines.offpolicy import run_offpolicy
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = dict(
    max_env_step=20_000,
    env=dict(id="rlpipe/MaskedGrid-v0", n_envs=4, eval_n_envs=2, stop_value=0.99),
    replay=dict(capacity=20_000, min_samples=200),
    policy=dict(
        model=dict(hidden=(64, 64)),
        learn=dict(lr=1e-3, batch_size=64, gamma=0.95, update_per_collect=16,
                   target_update_freq=100),
        collect=dict(n_sample=64, random_collect_size=200),
        other=dict(eps=dict(type="linear", start=1.0, end=0.05, decay=5000)),
        eval=dict(evaluator=dict(eval_freq=50, n_episode=2)),
    ),
)

ENTRY = Entry(name="maskedgrid-dqn", policy_cls=DQNPolicy, config=config,
              runner=run_offpolicy, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
