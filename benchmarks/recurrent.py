"""Memory on CartPole without velocities, and what recurrence costs the collector.

1. Learning: for each seed, `cartpole-novel-ppo` (feed-forward) and `cartpole-novel-ppo-lstm`
   train on rlpipe/CartPoleNoVel-v1 with a budget of 100k env steps (each entry stops once its
   mean eval return reaches 475): env steps to 475 (or "-"), final and best eval return, wall
   time. Issue #15 expects the LSTM to reach 475 on 4/5 seeds and feed-forward PPO to stay
   below 150.
2. Collection: env steps/s of `StepCollector` on the same env (sync, 8 envs) acting with PPO's
   collect face and with LSTM-PPO's (64-unit actor and critic LSTMs); rounds alternate, the best
   of each is kept, and the ratio is printed.
3. Beside sb3-contrib's RecurrentPPO (`--vs-sb3`): both train `--sb3-steps` env steps on the
   same env at rl-baselines3-zoo's `ppo_lstm` CartPoleNoVel-v1 settings (8 envs × 32 steps,
   batch 256, 20 epochs, lr 1e-3 linear, gamma 0.98, lambda 0.8, LSTM 64 with a critic LSTM,
   one ReLU layer of 64; its VecNormalize, ours obs_norm), one torch thread each, no
   evaluation during training. The implementations alternate seed by seed; each run's
   process CPU time covers training only (collection, GAE, updates), then 10 deterministic
   episodes give its mean return. Printed: env steps per CPU-second of each, their ratio
   (rlpipe over RecurrentPPO; the mean of the per-seed ratios and its range), and the returns.

`--collectors N` runs the learning part with N local collector processes (each keeps its own
hidden states; the learner trains on their rollouts), `--entries` picks the entries.

Run:  python benchmarks/recurrent.py [--seeds 5] [--budget 100000] [--skip-learning]
          [--skip-collection] [--collectors 2] [--entries cartpole-novel-ppo-lstm]
      python benchmarks/recurrent.py --vs-sb3 [--seeds 3] [--sb3-steps 30000] [--first-seed 0]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

import numpy as np
import torch
from easydict import EasyDict

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from rlpipe.contexts import OnlineRLContext  # noqa: E402
from rlpipe.engine import Task  # noqa: E402
from rlpipe.envs import EnvManager  # noqa: E402
from rlpipe.middleware import StepCollector, gae_estimator, multistep_trainer  # noqa: E402
from rlpipe.middleware.evaluator import evaluate_episodes  # noqa: E402
from rlpipe.policies import PPOLSTMPolicy, PPOPolicy  # noqa: E402
from rlpipe.zoo import get_entry  # noqa: E402
from rlpipe.training import train  # noqa: E402

ENV = "rlpipe/CartPoleNoVel-v1"
ENTRIES = ("cartpole-novel-ppo", "cartpole-novel-ppo-lstm")


def learning(seeds: int, budget: int, entries=ENTRIES, collectors: int = 0) -> None:
    where = f", {collectors} local collector processes" if collectors else ""
    print(f"learning on {ENV}, budget {budget} env steps, stop at 475{where}")
    print(f"{'entry':26s} {'seed':>4s} {'steps to 475':>12s} {'final':>7s} {'best':>7s} "
          f"{'wall s':>7s}")
    parallel = dict(collectors=collectors, backend="local") if collectors else {}
    for name in entries:
        solved, walls = 0, []
        for seed in range(seeds):
            with tempfile.TemporaryDirectory() as tmp:
                start = time.perf_counter()
                r = train(name, seed=seed, max_env_step=budget, run_dir=f"{tmp}/run",
                          progress=False, **parallel)
                walls.append(time.perf_counter() - start)
            solved += bool(r["solved"])
            steps = str(r["env_step"]) if r["solved"] else "-"
            print(f"{name:26s} {seed:4d} {steps:>12s} {r['eval_value']:7.1f} "
                  f"{r['best_eval_value']:7.1f} {walls[-1]:7.1f}", flush=True)
        print(f"{name}: reached 475 on {solved}/{seeds} seeds, mean wall "
              f"{sum(walls) / len(walls):.1f} s")


def collect_rate(policy_cls, n_envs: int, steps: int) -> float:
    entry = get_entry("cartpole-novel-ppo-lstm" if policy_cls is PPOLSTMPolicy
                      else "cartpole-novel-ppo")
    env = EnvManager(ENV, n_envs=n_envs, seed=0, mode="sync")
    policy = policy_cls(dict(entry.resolve().policy, seed=0), env.observation_space,
                        env.action_space)
    cfg = EasyDict(policy=dict(collect=dict(n_sample=32 * n_envs, random_collect_size=0)))
    task = Task()
    with task.start(ctx=OnlineRLContext()):
        task.use(StepCollector(cfg, policy.collect_mode, env))
        start = time.perf_counter()
        task.run(max_step=max(1, steps // (32 * n_envs)))
        elapsed = time.perf_counter() - start
        collected = task.ctx.env_step
    env.close()
    return collected / elapsed


def collection(rounds: int, steps: int, n_envs: int = 8) -> None:
    best = {PPOPolicy: 0.0, PPOLSTMPolicy: 0.0}
    for _ in range(rounds):
        for cls in best:
            best[cls] = max(best[cls], collect_rate(cls, n_envs, steps))
    ff, rec = best[PPOPolicy], best[PPOLSTMPolicy]
    print(f"collection on {ENV}, sync, {n_envs} envs, best of {rounds} rounds of {steps} steps")
    print(f"  PPO (feed-forward):   {ff:9.0f} env steps/s")
    print(f"  LSTM-PPO (recurrent): {rec:9.0f} env steps/s   ratio {rec / ff:.2f}")


def rlpipe_run(seed: int, steps: int) -> tuple:
    """(env steps, training CPU-s, mean return of 10 deterministic episodes) of LSTM-PPO at the
    entry's settings: StepCollector → gae_estimator → multistep_trainer, no evaluator."""
    cfg = get_entry("cartpole-novel-ppo-lstm").resolve({"seed": seed, "max_env_step": steps})
    env = EnvManager(ENV, n_envs=cfg.env.n_envs, seed=seed, mode="sync")
    policy = PPOLSTMPolicy(dict(cfg.policy, seed=seed), env.observation_space, env.action_space)
    task = Task()
    start = time.process_time()
    with task.start(ctx=OnlineRLContext()):
        task.use(StepCollector(cfg, policy.collect_mode, env))
        task.use(gae_estimator(cfg, policy.collect_mode))
        task.use(multistep_trainer(cfg, policy.learn_mode))
        task.run(max_step=steps // cfg.policy.collect.n_sample)
        collected = task.ctx.env_step
    cpu = time.process_time() - start
    env.close()
    eval_env = EnvManager(ENV, n_envs=10, seed=seed + 1000, mode="sync")
    ret = np.mean([r["return"] for r in evaluate_episodes(policy.eval_mode, eval_env, 10)])
    eval_env.close()
    return collected, cpu, float(ret)


def sb3_run(seed: int, steps: int) -> tuple:
    """The same for sb3-contrib's RecurrentPPO at rl-zoo's ppo_lstm CartPoleNoVel-v1 entry."""
    from sb3_contrib import RecurrentPPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import VecNormalize

    def linear(start: float):
        return lambda progress: progress * start

    env = VecNormalize(make_vec_env(ENV, n_envs=8, seed=seed))  # rl-zoo's `normalize: true`
    model = RecurrentPPO(
        "MlpLstmPolicy", env, n_steps=32, batch_size=256, n_epochs=20, gamma=0.98,
        gae_lambda=0.8, ent_coef=0.0, learning_rate=linear(1e-3), clip_range=linear(0.2),
        policy_kwargs=dict(ortho_init=False, activation_fn=torch.nn.ReLU, lstm_hidden_size=64,
                           enable_critic_lstm=True, net_arch=dict(pi=[64], vf=[64])),
        seed=seed, device="cpu")
    start = time.process_time()
    model.learn(total_timesteps=steps)
    cpu = time.process_time() - start
    eval_env = VecNormalize(make_vec_env(ENV, n_envs=10, seed=seed + 1000), training=False,
                            norm_reward=False)
    eval_env.obs_rms = env.obs_rms
    returns, _ = evaluate_policy(model, eval_env, n_eval_episodes=10, deterministic=True,
                                 return_episode_rewards=True)
    return model.num_timesteps, cpu, float(np.mean(returns))


def versus_sb3(seeds: int, steps: int, first_seed: int = 0) -> None:
    torch.set_num_threads(1)
    print(f"LSTM-PPO beside sb3-contrib RecurrentPPO on {ENV}, {steps} env steps, rl-zoo's "
          f"ppo_lstm settings, one torch thread, process CPU time of training")
    print(f"{'seed':>4s} {'impl':12s} {'env steps':>9s} {'CPU s':>7s} {'steps/CPU-s':>11s} "
          f"{'return':>7s}")
    ratios, returns = [], {"rlpipe": [], "RecurrentPPO": []}
    for seed in range(first_seed, first_seed + seeds):
        order = [("rlpipe", rlpipe_run), ("RecurrentPPO", sb3_run)]
        rates = {}
        for name, run in (order if seed % 2 == 0 else order[::-1]):
            n, cpu, ret = run(seed, steps)
            rates[name] = n / cpu
            returns[name].append(ret)
            print(f"{seed:4d} {name:12s} {n:9d} {cpu:7.1f} {n / cpu:11.0f} {ret:7.1f}",
                  flush=True)
        ratios.append(rates["rlpipe"] / rates["RecurrentPPO"])
    print(f"rlpipe / RecurrentPPO env steps per CPU-second: mean {np.mean(ratios):.2f}× "
          f"(seeds: {min(ratios):.2f}–{max(ratios):.2f})")
    for name, values in returns.items():
        print(f"{name} return after {steps} steps: mean {np.mean(values):.1f} "
              f"(min {min(values):.1f}, max {max(values):.1f})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budget", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--collect-steps", type=int, default=20_000)
    parser.add_argument("--skip-learning", action="store_true")
    parser.add_argument("--skip-collection", action="store_true")
    parser.add_argument("--collectors", type=int, default=0)
    parser.add_argument("--entries", nargs="+", default=list(ENTRIES), choices=ENTRIES)
    parser.add_argument("--vs-sb3", action="store_true",
                        help="only part 3: CPU per env step beside sb3-contrib's RecurrentPPO")
    parser.add_argument("--sb3-steps", type=int, default=30_000)
    parser.add_argument("--first-seed", type=int, default=0, help="--vs-sb3: seeds from this one")
    args = parser.parse_args()
    if args.vs_sb3:
        versus_sb3(args.seeds, args.sb3_steps, args.first_seed)
        return
    if not args.skip_collection:
        collection(args.rounds, args.collect_steps)
    if not args.skip_learning:
        learning(args.seeds, args.budget, args.entries, args.collectors)


if __name__ == "__main__":
    main()
