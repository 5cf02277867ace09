"""The settings table of the parity benchmark: how each rl-zoo setting is expressed on each side,
and every difference of semantics between rlpipe and SB3 2.9 that remains (docs/benchmarks.md
prints this table; `python benchmarks/parity.py --list` too)."""
from __future__ import annotations

from typing import List, Tuple

# (setting, rlpipe, SB3, semantics: what differs and how the harness matches it)
SETTINGS: List[Tuple[str, str, str, str]] = [
    ("train schedule (off-policy)", "`collect.n_sample` env steps, then up to "
     "`learn.update_per_collect` updates per iteration",
     "`train_freq` env steps, then `gradient_steps` (-1: as many as steps collected)",
     "Same counts: n_sample = train_freq × n_envs, update_per_collect = gradient_steps. Both "
     "train after each burst of collection."),
    ("warm-up", "`collect.random_collect_size` uniform-random steps; no update before "
     "`replay.min_samples` transitions", "`learning_starts`: random actions and no training "
     "while num_timesteps ≤ learning_starts",
     "Set equal. SB3 trains on the first rollout past learning_starts; rlpipe's sample-ratio "
     "controller allows n_sample×ratio updates per inserted step counted from step 0, so the "
     "first burst is full in both. With learning_starts 0 (LunarLander DQN) rlpipe waits for "
     "one batch (min_samples = batch_size); SB3 samples a batch with repeats from fewer rows."),
    ("ε schedule (DQN)", "linear over `other.eps.decay` env steps, evaluated once per "
     "iteration (at the iteration's first env step), or before every env step with "
     "`other.eps.per_env_step: True`",
     "linear over `exploration_fraction` × total_timesteps, recomputed at every env step",
     "Decay matched in env steps (8000 for CartPole, rl-zoo's 0.16 × 50k). SB3's fraction is "
     "of the budget given to learn(): a 20k SB3 run with rl-zoo's 0.16 decays over 3200 steps, "
     "so the harness passes exploration_fraction = 8000/budget. Per-iteration vs per-step ε: "
     "rlpipe's default is at most one iteration (256 steps, ≤ 3% of ε's range) late; "
     "`dqn-cartpole-20k-eps-step` sets `per_env_step` and matches SB3 exactly (ε(t) for the "
     "action at env step t on both sides)."),
    ("target network (DQN)", "hard copy every `learn.target_update_freq` updates",
     "hard copy (tau 1) every `target_update_interval` env steps (÷ n_envs calls)",
     "CartPole: SB3's 10 env steps fall between bursts of 128 updates, so the target is the "
     "online net after the previous burst; rlpipe copies every 128 updates: the same. "
     "LunarLander (1 update per step): 250 steps = 250 updates."),
    ("double Q (DQN)", "`learn.double_q` (default True)", "none (vanilla DQN target)",
     "Off on both sides here; rlpipe's zoo entries keep it on."),
    ("TD loss, clipping (DQN)", "Huber (`learn.huber`), grad norm 10 (`learn.grad_clip`)",
     "smooth_l1 (Huber), max_grad_norm 10", "Same."),
    ("optimiser", "Adam, eps 1e-8 (PPO: 1e-5), fused kernel",
     "Adam, eps 1e-8 (PPO: 1e-5)", "Same update; the fused kernel changes only the speed."),
    ("network init", "PyTorch default Linear init (DQN/SAC/TD3); PPO orthogonal (√2, 0.01 "
     "policy head, 1 value head)", "the same", "Same scheme, different random draws."),
    ("replay", "uniform, preallocated arrays, own numpy Generator seeded by the run",
     "uniform `np.random.randint` on the global RNG", "Same distribution."),
    ("time limits", "truncation bootstraps from the true final obs",
     "`handle_timeout_termination=True`: the same", "Same."),
    ("learning rate schedule (PPO)", "`lr_schedule='linear'` to 0 over "
     "`lr_decay_env_steps` (= budget)", "`lin_1e-3`: linear in progress_remaining of learn()",
     "Same."),
    ("clip range (PPO CartPole)", "constant 0.2 (no schedule)", "`lin_0.2`: 0.2 → 0",
     "Differs: rlpipe has no clip schedule. Late in training SB3 clips harder."),
    ("PPO details", "advantages normalised per minibatch, value loss ½·(V − R)² unclipped with "
     "`value_coef` 1.0, grad norm 0.5", "advantages per minibatch, value loss mse(R, V) "
     "unclipped (clip_range_vf None) with vf_coef 0.5, max_grad_norm 0.5",
     "Same loss: 1.0 × ½ × squared error = 0.5 × squared error. (Runs recorded before "
     "2026-11-28 had value_coef 0.5, half SB3's value gradient: their rlpipe rows were "
     "rerun.)"),
    ("Dict observation (PPO DoorKey)", "the grid's ids scaled to [0, 1] by their largest "
     "values (object 10, colour 5, state 2), read flat; the direction one-hot",
     "`MultiInputPolicy` on the same numbers: the harness hands SB3 the grid already scaled "
     "(`ScaledGrid`, a float Box that SB3 reads flat); the direction one-hot",
     "Same inputs and network shapes (separate 64-64 tanh MLPs on the joined 151 inputs). "
     "Without `ScaledGrid` SB3 reads the raw ids (up to 10), and learned faster on DoorKey "
     "(docs/benchmarks.md, the DoorKey section). rl-zoo flattens the observation "
     "(FlatObsWrapper) and normalises it (VecNormalize); neither side does here."),
    ("SAC entropy", "auto α from 1.0 on log α, target −dim(A); log-std clamped to [−5, 2]",
     "ent_coef 'auto' from 1.0 on log α, target −dim(A); log-std clamped to [−20, 2]",
     "Clamp range differs; it binds only for near-deterministic policies. Critic loss: rlpipe "
     "mse(Q1) + mse(Q2), SB3 0.5 × that (Adam makes the factor nearly irrelevant). SB3 steps α "
     "before the critic and rlpipe after the actor; both use the pre-step α in the losses."),
    ("TD3 noise", "Gaussian 0.1 in [−1, 1] action units; target smoothing 0.2 clipped 0.5, "
     "policy delay 2", "NormalActionNoise 0.1 on the scaled action; the same smoothing and delay",
     "Same."),
    ("TD3 Pendulum warm-up", "1000 random steps", "1000 (rl-zoo: 10000)",
     "Lowered on both sides: with rl-zoo's 10000 a 10k-step run never trains."),
    ("TD3 Pendulum train freq", "n_sample 200, 200 updates", "train_freq 200, gradient_steps "
     "200 (rl-zoo: 1 episode, -1)", "Pendulum episodes are exactly 200 steps: the same."),
    ("envs", "`EnvManager` (mode auto), true final obs, no autoreset pseudo-steps",
     "`make_vec_env` (DummyVecEnv + Monitor)", "Same env count (DQN/SAC/TD3 1, PPO 8 / 16)."),
    ("evaluation", "the harness's greedy evaluator (eval face, online network)",
     "the same evaluator on `model.predict(deterministic=True)`",
     "Identical: 10 episodes in one env reset with the same seeds, at the same nominal env "
     "steps, between two updates. rlpipe's own evaluator is parked (1 episode at the first and "
     "last iteration, counted in its wall time)."),
    ("wall time", "`task.run()` minus evaluations", "`model.learn()` minus evaluations",
     "Training loop only, one torch thread on both sides."),
]


def settings_markdown() -> str:
    """The table as Markdown."""
    lines = ["| setting | rlpipe | SB3 2.9 | semantics / how matched |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in SETTINGS]
    return "\n".join(lines)
