"""TD3+BC on Pendulum-v1 from data set pendulum/medium-replay-v0 (states normalised by the data).

The paper's settings (Fujimoto & Gu 2021): TD3 with 256-256 MLPs, Adam 3e-4, batch 256, policy
noise 0.2 clipped at 0.5, actor every 2 updates, α = 2.5; the offline pipeline sets the state
normaliser from the data set. 10 000 updates (Pendulum's small data set needs far fewer than
D4RL's 1M). Train on another data set with `--set dataset.id=ID`. The default data set is made by:
"""
from typing import Any, Dict

from rlpipe.policies import TD3BCPolicy
from rlpipe.zoo._offline import resolve_config, run_offline
from rlpipe.zoo._recipes import recipe_text

POLICY = TD3BCPolicy
PIPELINE = "offline"
DATASET = "pendulum/medium-replay-v0"
__doc__ += recipe_text(DATASET)

config: Dict[str, Any] = dict(
    max_train_iter=10_000,
    dataset=dict(id=DATASET),
    env=dict(id="Pendulum-v1", eval_n_envs=5, stop_value=None),
    policy=dict(
        model=dict(actor_hidden=(256, 256), critic_hidden=(256, 256)),
        learn=dict(batch_size=256, actor_lr=3e-4, critic_lr=3e-4, alpha=2.5),
        eval=dict(evaluator=dict(eval_freq=2500, n_episode=10)),
    ),
)


def main(cfg: Any) -> Dict[str, Any]:
    return run_offline(cfg, TD3BCPolicy)


if __name__ == "__main__":
    print(main(resolve_config(TD3BCPolicy, config)))
