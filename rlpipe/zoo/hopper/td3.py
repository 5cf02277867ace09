"""TD3 on MuJoCo Hopper-v5 (needs the [mujoco] extra; stop at a mean eval return of 3000).

Fujimoto et al. 2018's settings as rl-zoo3 runs them (``hyperparams/td3.yml``): actor and critics
[400, 300], Adam 1e-3, batch 100, γ 0.99, τ 0.005, policy delay 2, target noise 0.2 clipped at
0.5, Gaussian exploration noise 0.1, 10k uniformly random warm-up steps, 1M-transition replay,
one update per env step. rl-zoo3's run scores 3,606 after 1M env steps (Hopper-v3); the paper
reports 3,564 (Table 1, max over 1M steps).
"""
from typing import Any, Dict

from rlpipe.policies import TD3Policy
from rlpipe.pipelines.offpolicy import run_offpolicy
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = dict(
    max_env_step=1_000_000,
    env=dict(id="Hopper-v5", n_envs=1, eval_n_envs=5, stop_value=3000),
    replay=dict(capacity=1_000_000, min_samples=10_000),
    policy=dict(
        device="auto",
        model=dict(actor_hidden=(400, 300), critic_hidden=(400, 300)),
        learn=dict(batch_size=100, gamma=0.99, tau=0.005, actor_lr=1e-3, critic_lr=1e-3,
                   policy_delay=2, target_noise=0.2, target_noise_clip=0.5,
                   update_per_collect=64),
        collect=dict(n_sample=64, random_collect_size=10_000, noise_scale=0.1),
        eval=dict(evaluator=dict(eval_freq=10_000, n_episode=10)),
    ),
)

ENTRY = Entry(name="hopper-td3", policy_cls=TD3Policy, config=config,
              runner=run_offpolicy, requires={"mujoco": "mujoco"}, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
