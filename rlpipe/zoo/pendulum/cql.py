"""CQL (SAC) on Pendulum-v1 from data set pendulum/medium-replay-v0 (α_cql = 1, BC warm start).

Kumar et al. 2020's continuous CQL(H) on SAC (10 sampled actions, no entropy in the backup,
critic lr 3e-4) with 256-256 MLPs, actor lr 3e-4 and α_cql = 1 (the paper's 5 kept Q so low on
Pendulum's small data sets that the actor never left the behaviour's average), and the authors'
behaviour-cloning start of the actor (1000 updates). 10 000 updates. Train on another data set
with `--set dataset.id=ID`. The default data set is made by:
"""
from typing import Any, Dict

from rlpipe.policies import CQLPolicy
from rlpipe.zoo._offline import resolve_config, run_offline
from rlpipe.zoo._recipes import recipe_text

POLICY = CQLPolicy
PIPELINE = "offline"
DATASET = "pendulum/medium-replay-v0"
__doc__ += recipe_text(DATASET)

config: Dict[str, Any] = dict(
    max_train_iter=10_000,
    dataset=dict(id=DATASET),
    env=dict(id="Pendulum-v1", eval_n_envs=5, stop_value=None),
    policy=dict(
        model=dict(actor_hidden=(256, 256), critic_hidden=(256, 256)),
        learn=dict(batch_size=256, actor_lr=3e-4, critic_lr=3e-4, alpha_lr=3e-4, cql_alpha=1.0,
                   cql_n_actions=10, bc_steps=1000),
        eval=dict(evaluator=dict(eval_freq=2500, n_episode=10)),
    ),
)


def main(cfg: Any) -> Dict[str, Any]:
    return run_offline(cfg, CQLPolicy)


if __name__ == "__main__":
    print(main(resolve_config(CQLPolicy, config)))
