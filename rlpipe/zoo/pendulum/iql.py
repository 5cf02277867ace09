"""IQL on Pendulum-v1 from data set pendulum/medium-replay-v0 (expectile 0.7, β = 0.5).

The paper's MuJoCo settings (Kostrikov et al. 2021: 256-256 MLPs, Adam 3e-4, batch 256,
expectile 0.7, weights clipped at 100, cosine actor lr) except the inverse temperature: β = 3
overfits the few high-advantage rows of Pendulum's small data sets, β = 0.5 held up in rlpipe's
own runs (docs/zoo.md). 10 000 updates. Train on another data set with `--set dataset.id=ID`.
The default data set is made by:
"""
from typing import Any, Dict

from rlpipe.policies import IQLPolicy
from rlpipe.zoo._offline import resolve_config, run_offline
from rlpipe.zoo._recipes import recipe_text

POLICY = IQLPolicy
PIPELINE = "offline"
DATASET = "pendulum/medium-replay-v0"
__doc__ += recipe_text(DATASET)

config: Dict[str, Any] = dict(
    max_train_iter=10_000,
    dataset=dict(id=DATASET),
    env=dict(id="Pendulum-v1", eval_n_envs=5, stop_value=None),
    policy=dict(
        model=dict(actor_hidden=(256, 256), critic_hidden=(256, 256), value_hidden=(256, 256)),
        learn=dict(batch_size=256, actor_lr=3e-4, critic_lr=3e-4, value_lr=3e-4, expectile=0.7,
                   beta=0.5, max_weight=100.0, actor_lr_cosine_steps=10_000),
        eval=dict(evaluator=dict(eval_freq=2500, n_episode=10)),
    ),
)


def main(cfg: Any) -> Dict[str, Any]:
    return run_offline(cfg, IQLPolicy)


if __name__ == "__main__":
    print(main(resolve_config(IQLPolicy, config)))
