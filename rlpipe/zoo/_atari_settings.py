"""What every Atari zoo entry shares: the env section and the published DQN and PPO settings.

The env is an ``atari-*`` short name in mode "auto": EnvPool where it is installed, ale-py's
frames (``rlpipe/envs/_atari.py``) in one process per env otherwise; ``EnvManager`` is the one
place that decides, and ``ATARI_PRESETS`` the one place that says how frames are preprocessed. The
collector's envs take the "train" preset (rewards clipped to their sign, a lost life ends the
transition, as the DQN and PPO papers and rl-zoo3 train), the evaluator's the "eval" one (real
scores, whole games); both press FIRE after resets and lost lives.
The learner runs where ``device="auto"`` finds CUDA; the acting copies stay on the CPU.

DQN: Mnih et al. 2015 as rl-zoo3 (``hyperparams/dqn.yml``, atari) and CleanRL (``dqn_atari.py``)
run it: Nature CNN (512 units), Adam 1e-4, batch 32, γ 0.99, 1M-transition replay (each frame
stored once), 100k steps before learning, one update every 4 env steps, a hard target copy every
1,000 env steps (= 250 updates: our counter counts updates), ε 1 → 0.01 over the first 10% of
10M env steps. Double-Q, Huber loss and gradient-norm clipping at 10 are our DQN's defaults.

PPO: rl-zoo3 (``hyperparams/ppo.yml``, atari) and CleanRL (``ppo_atari.py``): 8 envs × 128
steps, 4 epochs of minibatches of 256, Adam 2.5e-4 decaying linearly to 0, clip 0.1, value
coefficient 0.5 with the value clipped at ±0.1 (CleanRL), entropy 0.01, γ 0.99, λ 0.95,
gradient norm 0.5, one shared Nature-CNN trunk. rl-zoo3 also decays the clip range; we keep it.

Budgets are in env (agent) steps of 4 frames, as in rl-zoo3's ``n_timesteps``: 10M steps = 40M
frames.
"""
from __future__ import annotations

from typing import Any, Dict


def atari_env(game: str, stop_value: float | None, n_envs: int = 8) -> Dict[str, Any]:
    return dict(id=f"atari-{game}", n_envs=n_envs, eval_n_envs=4, stop_value=stop_value,
                mode="auto", env_kwargs={"atari_preset": "train"},
                eval_env_kwargs={"atari_preset": "eval"})


def dqn_config(game: str, stop_value: float | None) -> Dict[str, Any]:
    max_env_step = 10_000_000
    return dict(
        max_env_step=max_env_step,
        env=atari_env(game, stop_value),
        replay=dict(capacity=1_000_000, min_samples=100_000),
        policy=dict(
            device="auto",
            model=dict(hidden=(512,), dueling=False),
            learn=dict(lr=1e-4, batch_size=32, gamma=0.99, nstep=1, update_per_collect=2,
                       target_update_freq=250),
            collect=dict(n_sample=8, random_collect_size=100_000),  # 8 envs × 1 step
            other=dict(eps=dict(type="linear", start=1.0, end=0.01,
                                decay=max_env_step // 10)),
            eval=dict(evaluator=dict(eval_freq=25_000, n_episode=8)),  # every 100k env steps
        ),
        ckpt=dict(train_freq=25_000),
    )


def ppo_config(game: str, stop_value: float | None) -> Dict[str, Any]:
    return dict(
        max_env_step=10_000_000,
        env=atari_env(game, stop_value),
        policy=dict(
            device="auto",
            model=dict(hidden=(512,), activation="relu", share_encoder=True),
            learn=dict(lr=2.5e-4, lr_schedule="linear", epoch_per_collect=4, batch_size=256,
                       gamma=0.99, gae_lambda=0.95, clip_ratio=0.1, value_clip=0.1,
                       value_coef=0.5, entropy_coef=0.01, grad_clip=0.5),
            collect=dict(n_sample=1024),  # 8 envs × 128 steps
            eval=dict(evaluator=dict(eval_freq=1600, n_episode=8)),  # ≈ every 100k env steps
        ),
        ckpt=dict(train_freq=1600),
    )
