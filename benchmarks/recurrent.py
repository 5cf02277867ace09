"""Memory on CartPole without velocities, and what recurrence costs the collector.

1. Learning: for each seed, `cartpole-novel-ppo` (feed-forward) and `cartpole-novel-ppo-lstm`
   train on rlpipe/CartPoleNoVel-v1 with a budget of 100k env steps (each entry stops once its
   mean eval return reaches 475): env steps to 475 (or "-"), final and best eval return, wall
   time. Issue #15 expects the LSTM to reach 475 on 4/5 seeds and feed-forward PPO to stay
   below 150.
2. Collection: env steps/s of `StepCollector` on the same env (sync, 8 envs) acting with PPO's
   collect face and with LSTM-PPO's (64-unit actor and critic LSTMs); rounds alternate, the best
   of each is kept, and the ratio is printed.

`--collectors N` runs the learning part with N local collector processes (each keeps its own
hidden states; the learner trains on their rollouts), `--entries` picks the entries.

Run:  python benchmarks/recurrent.py [--seeds 5] [--budget 100000] [--skip-learning]
          [--skip-collection] [--collectors 2] [--entries cartpole-novel-ppo-lstm]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

from easydict import EasyDict

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from rlpipe.contexts import OnlineRLContext  # noqa: E402
from rlpipe.engine import Task  # noqa: E402
from rlpipe.envs import EnvManager  # noqa: E402
from rlpipe.middleware import StepCollector  # noqa: E402
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
    args = parser.parse_args()
    if not args.skip_collection:
        collection(args.rounds, args.collect_steps)
    if not args.skip_learning:
        learning(args.seeds, args.budget, args.entries, args.collectors)


if __name__ == "__main__":
    main()
