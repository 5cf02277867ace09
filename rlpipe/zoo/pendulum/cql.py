"""CQL (SAC) on Pendulum-v1 from data set pendulum/medium-replay-v0 (Lagrange, gap τ = 5).

Kumar et al. 2020's continuous CQL(H) on SAC (10 sampled actions, no entropy in the backup) in
its Lagrange form (α' learnt to hold the conservative gap near 5, α_cql = 1), with the settings
of rlpipe's own pendulum-sac, which made the data: 64-64 MLPs, Adam 1e-3 for actor, critics and
α, batch 128, Polyak 0.005, no BC warm start. With 256-256 networks, lr 3e-4 and batch 256 it
stayed below −900 after 3 000 updates on noisy expert data; with these, seed 0 on the
medium-replay data is at −267 after 3 000 updates and −115 after 4 000 (fixed α_cql = 1: the
same; on noisy expert data the fixed form swung from −418 to −1262, the Lagrange one ended at
−703). 4 000 updates. Train on another data set with `--set dataset.id=ID`.
The default data set is made by:
"""
from typing import Any, Dict

from rlpipe.policies import CQLPolicy
from rlpipe.pipelines.offline import run_offline
from rlpipe.pipelines.recipes import recipe_text
from rlpipe.zoo.registry import Entry

DATASET = "pendulum/medium-replay-v0"
__doc__ += recipe_text(DATASET)

config: Dict[str, Any] = dict(
    max_train_iter=4000,
    dataset=dict(id=DATASET),
    env=dict(id="Pendulum-v1", eval_n_envs=5, stop_value=None),
    policy=dict(
        model=dict(actor_hidden=(64, 64), critic_hidden=(64, 64)),
        learn=dict(batch_size=128, actor_lr=1e-3, critic_lr=1e-3, alpha_lr=1e-3, tau=0.005,
                   cql_alpha=1.0, lagrange_threshold=5.0, cql_n_actions=10, bc_steps=0),
        eval=dict(evaluator=dict(eval_freq=1000, n_episode=10)),
    ),
)

ENTRY = Entry(name="pendulum-cql", policy_cls=CQLPolicy, config=config,
              runner=run_offline, pipeline="offline", doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
