"""PPO on rlpipe/MaskedGrid-v0 with action masks: solves it (eval return 1) within 20k env steps.

The env's mask (info["action_mask"]) masks the logits when acting, in the log-probabilities the
update learns from and in the entropy. `--set env.env_kwargs.expose_mask=False` hides the mask:
the agent then has to learn the walls from the −1 of an invalid move.
"""
from typing import Any, Dict

from rlpipe.policies import PPOPolicy
from rlpipe.pipelines.onpolicy import run_onpolicy
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = dict(
    max_env_step=20_000,
    env=dict(id="rlpipe/MaskedGrid-v0", n_envs=8, eval_n_envs=2, stop_value=0.99),
    policy=dict(
        model=dict(hidden=(64, 64)),
        learn=dict(lr=1e-3, epoch_per_collect=4, batch_size=128, gamma=0.95, gae_lambda=0.9,
                   clip_ratio=0.2, entropy_coef=0.01),
        collect=dict(n_sample=256),
        eval=dict(evaluator=dict(eval_freq=2, n_episode=2)),
    ),
    ckpt=dict(train_freq=2000),
)

ENTRY = Entry(name="maskedgrid-ppo", policy_cls=PPOPolicy, config=config,
              runner=run_onpolicy, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
