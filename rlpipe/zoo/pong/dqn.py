"""DQN on Atari Pong (ALE/Pong-v5 through ale-py, the [atari] extra): 84x84 grey frames, a
stack of 4, the Nature-CNN trunk. Config and a smoke test only: a full run takes ~10M frames."""
from typing import Any, Dict

from rlpipe.policies import DQNPolicy
from rlpipe.zoo._offpolicy import resolve_config, run_offpolicy

POLICY = DQNPolicy
REQUIRES = {"ale_py": "atari"}

config: Dict[str, Any] = dict(
    max_env_step=10_000_000,
    env=dict(id="atari-pong", n_envs=8, eval_n_envs=4, stop_value=20, mode="sync"),
    replay=dict(capacity=100_000, min_samples=20_000),
    policy=dict(
        model=dict(dueling=True),
        learn=dict(lr=1e-4, batch_size=32, gamma=0.99, update_per_collect=1, nstep=3,
                   target_update_freq=1000),
        collect=dict(n_sample=8, random_collect_size=20_000),
        other=dict(eps=dict(type="linear", start=1.0, end=0.01, decay=250_000)),
        eval=dict(evaluator=dict(eval_freq=25_000, n_episode=4)),
    ),
)


def main(cfg: Any) -> Dict[str, Any]:
    return run_offpolicy(cfg, DQNPolicy)


if __name__ == "__main__":
    print(main(resolve_config(DQNPolicy, config)))
