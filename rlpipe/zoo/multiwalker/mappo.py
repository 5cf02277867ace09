"""MAPPO on SISL multiwalker_v9 (3 walkers, Box(-1, 1, (4,)) torques): a shared Gaussian actor
with an agent id and a centralised critic on the global state; a walker that falls leaves the
episode (``terminate_on_fall=False, remove_on_fall=True``), its rows masked from then on.

Settings follow BenchMARL's (Bettini et al. 2024) multiwalker task and MAPPO configs
(benchmarl/conf/task/pettingzoo/multiwalker.yaml, algorithm/mappo.yaml,
experiment/base_experiment.yaml, model/layers/mlp.yaml): individual rewards
(``shared_reward=False``), fall −10, terminate −100, 500 cycles; shared parameters,
256-256 Tanh MLPs, γ 0.99, GAE λ 0.9, clip 0.2, no entropy bonus, squared-error critic loss,
gradient norm clipped at 5. Changed: walkers leave when they fall (BenchMARL ends the episode
there), and, for a few CPU minutes instead of their 3M frames, lr 3e-4 instead of 5e-5 and
1,600 env steps per update (8 envs × 200) in 4 minibatches × 4 epochs instead of 6,000 in
400-frame minibatches × 45. The rewards are PettingZoo's: per walker the package's forward progress
(+130·Δx/SCALE), −5·Δ|hull angle|, and −110 when it falls (−100 each when the package falls),
so the team return (the sum over walkers) of uniform random torques is about −270
(benchmarks/multiwalker.py; docs/multi_agent.md has the measured figures)."""
from typing import Any, Dict

from rlpipe.policies import MAPPOPolicy
from rlpipe.pipelines.onpolicy import run_onpolicy
from rlpipe.zoo.registry import Entry

# what env.id names: a picklable "module:factory" string (the module imports PettingZoo, so the
# entry names it instead of importing it: listing the zoo needs no optional package)
ENV_ID = "rlpipe.zoo.multiwalker._env:multiwalker_env"
config: Dict[str, Any] = dict(
    max_env_step=48_000,
    env=dict(id=ENV_ID, n_envs=8, eval_n_envs=8,
             env_kwargs=dict(n_walkers=3, shared_reward=False, terminate_on_fall=False,
                             remove_on_fall=True, max_cycles=500)),
    policy=dict(
        model=dict(hidden=(256, 256), activation="tanh"),
        learn=dict(lr=3e-4, critic_lr=3e-4, epoch_per_collect=4, n_minibatches=4,
                   gae_lambda=0.9, entropy_coef=0.0, value_loss="mse", grad_clip=5.0),
        collect=dict(n_sample=1600),  # 8 envs × 200 steps per update
        eval=dict(evaluator=dict(eval_freq=160, n_episode=8)),  # every 10 updates
    ),
    ckpt=dict(train_freq=800),  # every 50 updates (80k env steps)
)

ENTRY = Entry(name="multiwalker-mappo", policy_cls=MAPPOPolicy, config=config,
              runner=run_onpolicy, doc=__doc__,
              requires={"pettingzoo": "marl", "Box2D": "box2d", "pygame": "box2d"})


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
