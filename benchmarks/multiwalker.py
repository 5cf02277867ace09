"""SISL multiwalker_v9 (3 walkers, walkers that fall leave early): MAPPO against random.

Trains the zoo entry multiwalker-mappo as it is (budget: the entry's max_env_step unless
--steps) once per seed, then scores each run's final weights with `rlpipe eval` (deterministic
actions) and uniformly random torques on the same eval seeds and env settings (EPISODES
episodes each). The team return is the episode return summed over the walkers (each walker's
own reward: shared_reward=False). Reported: team returns, wall time per training run, and its
env steps/s as a ratio of a bare PettingZoo loop's (random torques, one env, this process)
measured in the same run.

Run:  nice python benchmarks/multiwalker.py [--seeds 3] [--steps N] [--episodes 16]
"""
from __future__ import annotations

import argparse
import logging
import pathlib
import statistics
import sys
import tempfile
import time
from typing import Dict, List

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

NAME = "multiwalker-mappo"


def bare_loop_steps_per_s(env_kwargs: dict, steps: int = 2000) -> float:
    """Env steps/s of PettingZoo's multiwalker with random torques, no rlpipe in the loop."""
    from rlpipe.zoo.multiwalker._env import multiwalker_env

    env, rng = multiwalker_env(**env_kwargs), np.random.default_rng(0)
    env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        env.step({a: rng.uniform(-1, 1, 4).astype(np.float32) for a in env.agents})
        if not env.agents:
            env.reset()
    env.close()
    return steps / (time.perf_counter() - start)


def main() -> None:
    from rlpipe.zoo import get_entry
    from rlpipe.training import train
    from rlpipe.tools.evaluate import evaluate_run
    from rlpipe.zoo.multiwalker._baseline import random_team_return

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=None,
                        help="env steps per training run (default: the entry's budget)")
    parser.add_argument("--episodes", type=int, default=16, help="eval episodes per score")
    args = parser.parse_args()
    logging.getLogger("rlpipe").setLevel(logging.WARNING)
    cfg = get_entry(NAME).resolve()
    bare = bare_loop_steps_per_s(dict(cfg.env.env_kwargs))
    rand = random_team_return(cfg, args.episodes)["mean_return"]
    rows: List[Dict[str, float]] = []
    for seed in range(args.seeds):
        with tempfile.TemporaryDirectory(prefix="multiwalker-") as tmp:
            out = train(NAME, seed=seed, max_env_step=args.steps, run_dir=tmp + "/run",
                        progress=False)
            score = evaluate_run(tmp + "/run", episodes=args.episodes)["mean_return"]
        rows.append({"return": score, "wall_s": float(out["wall_time"]),
                     "steps_per_s": out["env_step"] / out["wall_time"], "steps": out["env_step"]})
        print(f"seed {seed}: team return {score:.1f} after {out['env_step']} env steps, "
              f"{out['wall_time']:.0f} s", flush=True)
    trained = [r["return"] for r in rows]
    speed = statistics.mean(r["steps_per_s"] for r in rows)
    print(f"\nmultiwalker_v9, {args.seeds} seeds, {rows[0]['steps']} env steps per run, "
          f"{args.episodes} eval episodes (same seeds for both)\n")
    print("| policy | team return | per seed | wall s per run | env steps/s |")
    print("|---|---|---|---|---|")
    print(f"| random | {rand:.1f} | | | bare loop: {bare:.0f} (1.00×) |")
    spread = statistics.stdev(trained) if len(trained) > 1 else 0.0
    print(f"| MAPPO | {statistics.mean(trained):.1f} ± {spread:.1f} | "
          f"{', '.join(f'{v:.1f}' for v in trained)} | "
          f"{statistics.mean(r['wall_s'] for r in rows):.0f} | "
          f"{speed:.0f} ({speed / bare:.2f}× the bare loop, training included) |")


if __name__ == "__main__":
    main()
