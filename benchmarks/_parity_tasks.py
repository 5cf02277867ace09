"""The parity benchmark's tasks: one algorithm on one env at one budget, with rlpipe's config and
SB3's constructor arguments side by side, and the table of settings that documents them.

Hyperparameters are rl-baselines3-zoo's (hyperparams/{dqn,ppo,sac,td3}.yml) for each env; where
the two frameworks count or schedule a setting differently, `SETTINGS` says how it was matched.
Each rlpipe config is complete on its own (the zoo entries are not read), so a change to a zoo
entry cannot silently change what this benchmark compares.
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Any, Dict, List, Optional


@dataclasses.dataclass(frozen=True)
class ParityTask:
    """One benchmark task: `algo` on `env_id` for `budget` env steps, a greedy evaluation of
    `eval_episodes` episodes every `eval_every` env steps."""

    name: str
    algo: str                       # "dqn", "ppo", "sac" or "td3"
    env_id: str
    budget: int                     # env steps of training
    eval_every: int                 # env steps between greedy evaluations
    eval_episodes: int
    rlpipe: Dict[str, Any]          # zoo-style run config (merged over rlpipe's defaults)
    sb3: Dict[str, Any]             # keyword arguments of the SB3 algorithm's constructor
    n_envs: int = 1                 # training envs, the same on both sides
    requires: Optional[str] = None  # module the env needs (an extra), e.g. "Box2D", "mujoco"
    # True: each framework at its own defaults. rlpipe trains what `rlpipe train --algo ALGO
    # --env ENV` resolves (its standard defaults), with `rlpipe` holding only the run's budget
    # and the parked evaluator; SB3 gets no constructor argument but the env.
    defaults: bool = False

    def points(self) -> List[int]:
        """The nominal env steps of the evaluations: eval_every, 2·eval_every, …, budget."""
        pts = list(range(self.eval_every, self.budget, self.eval_every))
        return pts + [self.budget]

    def scaled(self, name: str, budget: int, eval_every: int, eval_episodes: int,
               eps_decay: Optional[int] = None, eps_per_env_step: bool = False) -> "ParityTask":
        """The same task at another budget (schedules that scale with the budget follow it; the
        ε decay keeps its length in env steps unless `eps_decay` gives a new one).
        `eps_per_env_step`: rlpipe recomputes ε before every env step, as SB3 does."""
        rl = copy.deepcopy(self.rlpipe)
        if eps_per_env_step:
            rl["policy"]["other"]["eps"]["per_env_step"] = True
        rl["max_env_step"] = budget
        learn = rl["policy"]["learn"]
        if learn.get("lr_schedule") == "linear":
            learn["lr_decay_env_steps"] = budget
        sb3 = dict(self.sb3)
        if "exploration_fraction" in sb3:  # keep the decay in env steps, not in budget fractions
            eps = rl["policy"]["other"]["eps"]
            eps["decay"] = min(eps_decay or eps["decay"], budget)
            sb3["exploration_fraction"] = eps["decay"] / budget
        return dataclasses.replace(self, name=name, budget=budget, eval_every=eval_every,
                                   eval_episodes=eval_episodes, rlpipe=rl, sb3=sb3)


def _offpolicy(env_id: str, n_envs: int, capacity: int, min_samples: int, random_steps: int,
               n_sample: int, updates: int, policy: Dict[str, Any], budget: int) -> Dict[str, Any]:
    policy = copy.deepcopy(policy)
    policy.setdefault("collect", {}).update(n_sample=n_sample, random_collect_size=random_steps)
    policy.setdefault("learn", {})["update_per_collect"] = updates
    # The zoo's own evaluator is parked (the harness evaluates); it still runs once at the first
    # and the last iteration, one episode, counted in rlpipe's wall time.
    policy["eval"] = dict(evaluator=dict(eval_freq=10**9, n_episode=1))
    return dict(max_env_step=budget, progress=False,
                env=dict(id=env_id, n_envs=n_envs, eval_n_envs=1, stop_value=None),
                replay=dict(capacity=capacity, min_samples=min_samples), policy=policy)


def _onpolicy(env_id: str, n_envs: int, policy: Dict[str, Any], budget: int,
              mode: Optional[str] = None) -> Dict[str, Any]:
    policy = copy.deepcopy(policy)
    policy["eval"] = dict(evaluator=dict(eval_freq=10**9, n_episode=1))
    env = dict(id=env_id, n_envs=n_envs, eval_n_envs=1, stop_value=None)
    if mode is not None:  # the env manager's mode, where "auto" would not step in this process
        env["mode"] = mode
    return dict(max_env_step=budget, progress=False, env=env, policy=policy)


# --- DQN --------------------------------------------------------------------------------------
# rl-zoo CartPole-v1: lr 2.3e-3, batch 64, buffer 100k, learning_starts 1000, gamma 0.99,
# target_update_interval 10, train_freq 256, gradient_steps 128, exploration_fraction 0.16
# (of its 50k steps: 8000 env steps), final eps 0.04, net_arch [256, 256]; 1 env.
_DQN_CARTPOLE = ParityTask(
    name="dqn-cartpole-50k", algo="dqn", env_id="CartPole-v1", budget=50_000, eval_every=2500,
    eval_episodes=10,
    rlpipe=_offpolicy("CartPole-v1", 1, 100_000, 1000, 1000, 256, 128, dict(
        model=dict(hidden=(256, 256)),
        learn=dict(lr=2.3e-3, batch_size=64, gamma=0.99, double_q=False, huber=True,
                   grad_clip=10.0, target_update_freq=128),
        other=dict(eps=dict(type="linear", start=1.0, end=0.04, decay=8000))), 50_000),
    sb3=dict(learning_rate=2.3e-3, batch_size=64, buffer_size=100_000, learning_starts=1000,
             gamma=0.99, target_update_interval=10, train_freq=256, gradient_steps=128,
             exploration_fraction=0.16, exploration_initial_eps=1.0, exploration_final_eps=0.04,
             max_grad_norm=10.0, policy_kwargs=dict(net_arch=[256, 256])),
)

# rl-zoo LunarLander-v3: lr 6.3e-4, batch 128, buffer 50k, learning_starts 0, gamma 0.99,
# target_update_interval 250, train_freq 4, gradient_steps -1 (= 4), exploration_fraction 0.12
# of 100k, final eps 0.1, net_arch [256, 256].
_DQN_LUNAR = ParityTask(
    name="dqn-lunarlander-100k", algo="dqn", env_id="LunarLander-v3", budget=100_000,
    eval_every=5000, eval_episodes=10, requires="Box2D",
    rlpipe=_offpolicy("LunarLander-v3", 1, 50_000, 128, 0, 4, 4, dict(
        model=dict(hidden=(256, 256)),
        learn=dict(lr=6.3e-4, batch_size=128, gamma=0.99, double_q=False, huber=True,
                   grad_clip=10.0, target_update_freq=250),
        other=dict(eps=dict(type="linear", start=1.0, end=0.1, decay=12_000))), 100_000),
    sb3=dict(learning_rate=6.3e-4, batch_size=128, buffer_size=50_000, learning_starts=0,
             gamma=0.99, target_update_interval=250, train_freq=4, gradient_steps=-1,
             exploration_fraction=0.12, exploration_initial_eps=1.0, exploration_final_eps=0.1,
             max_grad_norm=10.0, policy_kwargs=dict(net_arch=[256, 256])),
)

# --- PPO --------------------------------------------------------------------------------------
# rl-zoo CartPole-v1: 8 envs, n_steps 32, batch 256, gae_lambda 0.8, gamma 0.98, n_epochs 20,
# ent_coef 0, lr lin_1e-3, clip_range lin_0.2 (rlpipe: constant 0.2, see SETTINGS). SB3's vf_coef
# 0.5 weighs the mean squared value error: rlpipe's value_coef 1.0 on its ½·squared error.
_PPO_CARTPOLE = ParityTask(
    name="ppo-cartpole-50k", algo="ppo", env_id="CartPole-v1", budget=50_000, eval_every=2500,
    eval_episodes=10, n_envs=8,
    rlpipe=_onpolicy("CartPole-v1", 8, dict(
        model=dict(hidden=(64, 64), activation="tanh"),
        learn=dict(lr=1e-3, lr_schedule="linear", lr_decay_env_steps=50_000,
                   epoch_per_collect=20, batch_size=256, gamma=0.98, gae_lambda=0.8,
                   clip_ratio=0.2, entropy_coef=0.0, value_coef=1.0, grad_clip=0.5),
        collect=dict(n_sample=256)), 50_000),
    sb3=dict(n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20, ent_coef=0.0,
             learning_rate="lin_1e-3", clip_range="lin_0.2", vf_coef=0.5, max_grad_norm=0.5),
)

# rl-zoo LunarLander-v3: 16 envs, n_steps 1024, batch 64, gae_lambda 0.98, gamma 0.999,
# n_epochs 4, ent_coef 0.01, lr 3e-4, 1M steps.
_PPO_LUNAR = ParityTask(
    name="ppo-lunarlander-1m", algo="ppo", env_id="LunarLander-v3", budget=1_000_000,
    eval_every=50_000, eval_episodes=10, n_envs=16, requires="Box2D",
    rlpipe=_onpolicy("LunarLander-v3", 16, dict(
        model=dict(hidden=(64, 64), activation="tanh"),
        learn=dict(lr=3e-4, epoch_per_collect=4, batch_size=64, gamma=0.999, gae_lambda=0.98,
                   clip_ratio=0.2, entropy_coef=0.01, value_coef=1.0, grad_clip=0.5),
        collect=dict(n_sample=16_384)), 1_000_000),
    sb3=dict(n_steps=1024, batch_size=64, gae_lambda=0.98, gamma=0.999, n_epochs=4,
             ent_coef=0.01, learning_rate=3e-4, vf_coef=0.5, max_grad_norm=0.5),
)

# rl-zoo MiniGrid-DoorKey-5x5-v0: 8 envs, n_steps 128, batch 64, gae_lambda 0.95, gamma 0.99,
# n_epochs 10, ent_coef 0, lr 2.5e-4, clip 0.2, 100k steps. Both sides read the Dict observation
# (7×7×3 grid of ids + direction, the mission text left out) with SB3's MultiInputPolicy network:
# the grid flat and the direction one-hot into separate 64-64 tanh MLPs (rl-zoo's FlatObsWrapper
# and VecNormalize are left out on both sides; SETTINGS says what differs).
_PPO_DOORKEY = ParityTask(
    name="ppo-doorkey-100k", algo="ppo", env_id="MiniGrid-DoorKey-5x5-v0", budget=100_000,
    eval_every=10_000, eval_episodes=20, n_envs=8, requires="minigrid",
    rlpipe=_onpolicy("MiniGrid-DoorKey-5x5-v0", 8, dict(
        model=dict(hidden=(64, 64), activation="tanh", share_encoder=False,
                   encoders={"image": "mlp"}),
        learn=dict(lr=2.5e-4, epoch_per_collect=10, batch_size=64, gamma=0.99, gae_lambda=0.95,
                   clip_ratio=0.2, entropy_coef=0.0, value_coef=1.0, grad_clip=0.5),
        collect=dict(n_sample=1024)), 100_000, mode="sync"),
    sb3=dict(n_steps=128, batch_size=64, gae_lambda=0.95, gamma=0.99, n_epochs=10,
             ent_coef=0.0, learning_rate=2.5e-4, clip_range=0.2, vf_coef=0.5, max_grad_norm=0.5),
)

# The same with the three settings the `minigrid-doorkey-ppo` entry takes from rl-starter-files
# (torch-ac) instead of rl-zoo's, on both sides: an entropy bonus of 0.01, advantages not
# normalised, lr 7e-4 (the entry's docstring says why).
def _doorkey_entry_settings() -> ParityTask:
    rl = copy.deepcopy(_PPO_DOORKEY.rlpipe)
    rl["policy"]["learn"].update(lr=7e-4, entropy_coef=0.01, adv_norm=False)
    sb3 = dict(_PPO_DOORKEY.sb3, learning_rate=7e-4, ent_coef=0.01, normalize_advantage=False)
    return dataclasses.replace(_PPO_DOORKEY, name="ppo-doorkey-100k-entry", rlpipe=rl, sb3=sb3)


# --- SAC / TD3 ----------------------------------------------------------------------------------
# rl-zoo SAC Pendulum-v1: lr 1e-3, the rest SB3's defaults (buffer 1M, learning_starts 100,
# batch 256, tau 0.005, gamma 0.99, train_freq 1, gradient_steps 1, ent_coef auto from 1.0).
_SAC_PENDULUM = ParityTask(
    name="sac-pendulum-10k", algo="sac", env_id="Pendulum-v1", budget=10_000, eval_every=1000,
    eval_episodes=10,
    rlpipe=_offpolicy("Pendulum-v1", 1, 1_000_000, 256, 100, 1, 1, dict(
        model=dict(actor_hidden=(256, 256), critic_hidden=(256, 256)),
        learn=dict(batch_size=256, gamma=0.99, tau=0.005, actor_lr=1e-3, critic_lr=1e-3,
                   alpha_lr=1e-3, init_alpha=1.0, auto_alpha=True)), 10_000),
    sb3=dict(learning_rate=1e-3, buffer_size=1_000_000, learning_starts=100, batch_size=256,
             tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1, ent_coef="auto",
             policy_kwargs=dict(net_arch=[256, 256])),
)

# rl-zoo TD3 Pendulum-v1: gamma 0.98, buffer 200k, lr 1e-3, normal noise 0.1, net [400, 300],
# train_freq 1 episode (200 steps) with gradient_steps -1 (= 200), learning_starts 10000:
# lowered to 1000 here, or a 10k-step run would never train (SETTINGS says so).
_TD3_PENDULUM = ParityTask(
    name="td3-pendulum-10k", algo="td3", env_id="Pendulum-v1", budget=10_000, eval_every=1000,
    eval_episodes=10,
    rlpipe=_offpolicy("Pendulum-v1", 1, 200_000, 1000, 1000, 200, 200, dict(
        model=dict(actor_hidden=(400, 300), critic_hidden=(400, 300)),
        learn=dict(batch_size=256, gamma=0.98, tau=0.005, actor_lr=1e-3, critic_lr=1e-3,
                   policy_delay=2, target_noise=0.2, target_noise_clip=0.5),
        collect=dict(noise_scale=0.1)), 10_000),
    sb3=dict(learning_rate=1e-3, buffer_size=200_000, learning_starts=1000, batch_size=256,
             tau=0.005, gamma=0.98, train_freq=200, gradient_steps=200, policy_delay=2,
             target_policy_noise=0.2, target_noise_clip=0.5, action_noise=("normal", 0.1),
             policy_kwargs=dict(net_arch=[400, 300])),
)

# rl-zoo Hopper (MuJoCo defaults): learning_starts 10000; SAC lr 3e-4 batch 256 [256, 256];
# TD3 lr 1e-3 batch 256 [400, 300], normal noise 0.1; one update per env step.
_SAC_HOPPER = ParityTask(
    name="sac-hopper-100k", algo="sac", env_id="Hopper-v5", budget=100_000, eval_every=10_000,
    eval_episodes=10, requires="mujoco",
    rlpipe=_offpolicy("Hopper-v5", 1, 1_000_000, 10_000, 10_000, 1, 1, dict(
        model=dict(actor_hidden=(256, 256), critic_hidden=(256, 256)),
        learn=dict(batch_size=256, gamma=0.99, tau=0.005, actor_lr=3e-4, critic_lr=3e-4,
                   alpha_lr=3e-4, init_alpha=1.0, auto_alpha=True)), 100_000),
    sb3=dict(learning_rate=3e-4, buffer_size=1_000_000, learning_starts=10_000, batch_size=256,
             tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1, ent_coef="auto",
             policy_kwargs=dict(net_arch=[256, 256])),
)
_TD3_HOPPER = ParityTask(
    name="td3-hopper-100k", algo="td3", env_id="Hopper-v5", budget=100_000, eval_every=10_000,
    eval_episodes=10, requires="mujoco",
    rlpipe=_offpolicy("Hopper-v5", 1, 1_000_000, 10_000, 10_000, 1, 1, dict(
        model=dict(actor_hidden=(400, 300), critic_hidden=(400, 300)),
        learn=dict(batch_size=256, gamma=0.99, tau=0.005, actor_lr=1e-3, critic_lr=1e-3,
                   policy_delay=2, target_noise=0.2, target_noise_clip=0.5),
        collect=dict(noise_scale=0.1)), 100_000),
    sb3=dict(learning_rate=1e-3, buffer_size=1_000_000, learning_starts=10_000, batch_size=256,
             tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1, policy_delay=2,
             target_policy_noise=0.2, target_noise_clip=0.5, action_noise=("normal", 0.1),
             policy_kwargs=dict(net_arch=[400, 300])),
)

# --- Both frameworks at their defaults --------------------------------------------------------
def _at_defaults(algo: str, env_id: str, budget: int, eval_every: int) -> ParityTask:
    """`algo` on `env_id` with nothing but the budget given, on both sides: rlpipe's generic
    run (`rlpipe.standard_defaults`) against `SB3ALGO("MlpPolicy", env)` with one env."""
    parked = dict(eval=dict(evaluator=dict(eval_freq=10**9, n_episode=1)))
    return ParityTask(
        name=f"defaults-{algo}-{env_id.split('-')[0].lower()}-{budget // 1000}k", algo=algo,
        env_id=env_id, budget=budget, eval_every=eval_every, eval_episodes=10,
        rlpipe=dict(max_env_step=budget, progress=False,
                    env=dict(eval_n_envs=1, stop_value=None), policy=parked),
        sb3={}, n_envs=1, defaults=True)


DEFAULTS: Dict[str, ParityTask] = {t.name: t for t in (
    _at_defaults("sac", "Pendulum-v1", 20_000, 2000),
    _at_defaults("td3", "Pendulum-v1", 20_000, 2000),
    _at_defaults("ppo", "CartPole-v1", 100_000, 5000),
    _at_defaults("dqn", "CartPole-v1", 100_000, 5000),
    _at_defaults("ppo", "Acrobot-v1", 100_000, 5000),
)}

TASKS: Dict[str, ParityTask] = {**DEFAULTS, **{t.name: t for t in (
    _DQN_CARTPOLE.scaled("dqn-cartpole-20k", 20_000, 1000, 10),
    # rl-zoo's exploration_fraction 0.16 read against a 20k budget, as SB3 reads it when
    # learn(total_timesteps=20_000) is given rl-zoo's yml: ε decays over 3200 env steps.
    _DQN_CARTPOLE.scaled("dqn-cartpole-20k-eps3200", 20_000, 1000, 10, eps_decay=3200),
    # ε recomputed at every env step on both sides (rlpipe's `other.eps.per_env_step`): the one
    # difference of semantics left between the two DQNs at these settings.
    _DQN_CARTPOLE.scaled("dqn-cartpole-20k-eps-step", 20_000, 1000, 10, eps_per_env_step=True),
    _DQN_CARTPOLE,
    _DQN_LUNAR,
    _PPO_CARTPOLE,
    _PPO_LUNAR,
    _PPO_DOORKEY,
    _doorkey_entry_settings(),
    _SAC_PENDULUM,
    _TD3_PENDULUM,
    _SAC_HOPPER,
    _TD3_HOPPER,
)}}

# --quick: tiny budgets that only prove the harness runs end to end (numbers mean nothing).
QUICK: Dict[str, ParityTask] = {t.name: t for t in (
    _DQN_CARTPOLE.scaled("dqn-cartpole-quick", 2048, 512, 2),
    _PPO_CARTPOLE.scaled("ppo-cartpole-quick", 2048, 512, 2),
    _TD3_PENDULUM.scaled("td3-pendulum-quick", 800, 400, 1),
)}
