"""DQN on LunarLander-v3 (needs the [box2d] extra; stop at a mean eval return of 200)."""
from typing import Any, Dict

from rlpipe.policies import DQNPolicy
from rlpipe.pipelines.offpolicy import resolve_config, run_offpolicy

POLICY = DQNPolicy
REQUIRES = {"Box2D": "box2d"}  # import name -> rlpipe extra

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


def main(cfg: Any) -> Dict[str, Any]:
    return run_offpolicy(cfg, DQNPolicy)


if __name__ == "__main__":
    print(main(resolve_config(DQNPolicy, config)))
