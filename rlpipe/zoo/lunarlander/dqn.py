"""DQN on LunarLander-v3 (needs the [box2d] extra; stop at a mean eval return of 200)."""
from typing import Any, Dict

from rlpipe.policies import DQNPolicy
from rlpipe.pipelines.offpolicy import run_offpolicy
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = dict(
    max_env_step=500_000,
    env=dict(id="LunarLander-v3", n_envs=8, eval_n_envs=10, stop_value=200),
    replay=dict(capacity=100_000, min_samples=10_000),
    policy=dict(
        model=dict(hidden=(256, 256), dueling=True),
        learn=dict(lr=6.3e-4, batch_size=128, gamma=0.99, update_per_collect=4, nstep=3,
                   target_update_freq=250),
        collect=dict(n_sample=16, random_collect_size=10_000),
        other=dict(eps=dict(type="linear", start=1.0, end=0.05, decay=60_000)),
        eval=dict(evaluator=dict(eval_freq=5000, n_episode=10)),
    ),
)

ENTRY = Entry(name="lunarlander-dqn", policy_cls=DQNPolicy, config=config,
              runner=run_offpolicy, requires={"Box2D": "box2d"}, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
