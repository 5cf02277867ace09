"""R2D2 on CartPole without velocities (rlpipe/CartPoleNoVel-v1): target 400 within 200k env steps.

The paper's values (R2D2Policy.default_config) are sized for Atari with 256 actors; here they are
scaled down for one CPU process: a small LSTM, short sequences (burn-in 4 + 16 steps, a new one
every 8 steps — early CartPole episodes are short, and episodes of at most burn_in steps give no
sequence), a faster learning rate and target copy, 3-step returns. Sequence replay keeps R2D2's
prioritization (α 0.9, β 0.6, η 0.9) and value rescaling. See docs/recurrent.md.
"""
from typing import Any, Dict

from rlpipe.policies import R2D2Policy
from rlpipe.pipelines.offpolicy import run_offpolicy
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = dict(
    max_env_step=200_000,
    env=dict(id="rlpipe/CartPoleNoVel-v1", n_envs=8, eval_n_envs=10, stop_value=400),
    replay=dict(capacity=20_000, prioritized=True, alpha=0.9, beta=0.6, min_samples=2000),
    policy=dict(
        model=dict(hidden=(64,), core_size=64, kind="lstm", dueling=True),
        learn=dict(lr=1e-3, adam_eps=1e-8, batch_size=32, gamma=0.99, nstep=3, seq_len=16,
                   burn_in=4, stride=8, target_update_freq=200, update_per_collect=4,
                   grad_clip=10.0),
        collect=dict(n_sample=64),
        other=dict(eps=dict(type="linear", start=1.0, end=0.02, decay=30_000)),
        eval=dict(evaluator=dict(eval_freq=2000, n_episode=10)),
    ),
)

ENTRY = Entry(name="cartpole-novel-r2d2", policy_cls=R2D2Policy, config=config,
              runner=run_offpolicy, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
