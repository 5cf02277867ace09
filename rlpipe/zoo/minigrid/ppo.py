"""PPO on MiniGrid-DoorKey-5x5 with the Dict observation (image + direction; the mission text is
left out): the 7×7×3 grid of object/colour/state ids (scaled by their largest values) read as a
flat vector and the direction one-hot, into separate actor and critic MLPs (64, 64, tanh) — the
network of SB3's MultiInputPolicy.

Target: greedy eval return >= 0.85 by 60k env steps. The settings are rl-zoo's for this env
(8 envs × 128 steps per rollout, 10 epochs of minibatches of 64, γ 0.99, GAE λ 0.95, clip 0.2,
value weight 0.5 on SB3's mean squared error, which is value_coef=1 on rlpipe's ½·squared
error): 160 gradient steps per 1,024 env steps. With rl-starter-files' settings (16 envs,
4 epochs of minibatches of 256, lr 7e-4: 16 gradient steps per 1,024 env steps) the greedy
return was still 0.00 at 50k env steps. Three departures from rl-zoo, each the setting of
rl-starter-files' PPO (torch-ac, whose MiniGrid settings rl-zoo's follow): an entropy bonus of
0.01 (rl-zoo: 0), advantages not normalised per minibatch (SB3 normalises them) and lr 7e-4
(rl-zoo: 2.5e-4).
Why: until the first success every reward is 0, so the advantages are only the critic's errors.
Normalised per minibatch they become noise of unit size, and 160 gradient steps per rollout on it
move the policy away from uniform (entropy 1.94 → 1.58 by 61k on a seed that never found the
goal) into one that finds the key and the door less often than a random walk; the entropy bonus
of 0.01 does not hold it. Left unnormalised those advantages stay near 0, the bonus keeps the
policy near uniform (entropy about 1.93) until the random walk's few successes arrive, and the
larger lr makes up for the smaller policy steps after that (at 2.5e-4 a seed reached 0.86 only
at 61k). Without the bonus the policy drifts even unnormalised (one seed: entropy 1.3, no success
in 61k). The cost: once solved, the unnormalised advantages are small beside the bonus, the
entropy climbs back to about 1.4 and the greedy policy runs out of time on some layouts while
the sampling policy scores about 0.9: over 100 greedy episodes the weights at 61k score
0.92–0.96 on nine seeds of ten and 0.78 on seed 4 (0.96 at 42k).
Seeds 0–9 all reach 0.85 by 61k env steps (docs/benchmarks.md).
The run stops at the first evaluation that reaches 0.85.
`--set env.id=MiniGrid-Empty-5x5-v0` (or any other MiniGrid id) trains the same model on another
grid; `--set 'policy.model.encoders={"image": "conv"}'` puts the small conv trunk on the image.
"""
from typing import Any, Dict

from rlpipe.policies import PPOPolicy
from rlpipe.pipelines.onpolicy import run_onpolicy
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = dict(
    max_env_step=100_000,
    env=dict(id="MiniGrid-DoorKey-5x5-v0", n_envs=8, eval_n_envs=10, stop_value=0.85,
             mode="sync"),
    policy=dict(
        model=dict(hidden=(64, 64), activation="tanh", share_encoder=False,
                   encoders={"image": "mlp"}),
        learn=dict(lr=7e-4, lr_schedule="constant", epoch_per_collect=10, batch_size=64,
                   gamma=0.99, gae_lambda=0.95, clip_ratio=0.2, entropy_coef=0.01, value_coef=1.0,
                   adv_norm=False, grad_clip=0.5),
        collect=dict(n_sample=1024),
        eval=dict(evaluator=dict(eval_freq=1600, n_episode=20)),  # every 10 rollouts (10k steps)
    ),
    ckpt=dict(train_freq=3200),
)

ENTRY = Entry(name="minigrid-doorkey-ppo", policy_cls=PPOPolicy, config=config,
              runner=run_onpolicy, requires={"minigrid": "minigrid"}, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
