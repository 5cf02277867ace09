"""SAC on LunarLanderContinuous-v3 (needs the [box2d] extra; stop at a mean eval return of 200).

Settings after rl-zoo's tuned LunarLanderContinuous SAC (lr 7.3e-4, batch 256, [400, 300],
tau 0.01, 10k random warm-up steps, one update per env step). Not measured here: it needs
hundreds of thousands of env steps, far beyond the test suite's budget.
"""
from typing import Any, Dict

from rlpipe.policies import SACPolicy
from rlpipe.pipelines.offpolicy import run_offpolicy
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = dict(
    max_env_step=500_000,
    env=dict(id="LunarLanderContinuous-v3", n_envs=4, eval_n_envs=5, stop_value=200),
    replay=dict(capacity=1_000_000, min_samples=10_000),
    policy=dict(
        model=dict(actor_hidden=(400, 300), critic_hidden=(400, 300)),
        learn=dict(batch_size=256, gamma=0.99, tau=0.01, actor_lr=7.3e-4, critic_lr=7.3e-4,
                   alpha_lr=7.3e-4, update_per_collect=64),
        collect=dict(n_sample=64, random_collect_size=10_000),
        eval=dict(evaluator=dict(eval_freq=10_000, n_episode=10)),
    ),
)

ENTRY = Entry(name="lunarlandercontinuous-sac", policy_cls=SACPolicy, config=config,
              runner=run_offpolicy, requires={"Box2D": "box2d"}, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
