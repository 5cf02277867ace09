"""MPE simple_spread (mpe2, 3 agents, 25-step episodes): team return of random, IPPO and MAPPO.

The team return is the mean evaluation episode return summed over the 3 agents, on mpe2's
reward (per agent 0.5 × the shared distance term + 0.5 × its collision penalty). IPPO and
MAPPO train the zoo entries simple-spread-ippo / simple-spread-mappo as they are (budget:
the entry's max_env_step unless --steps) and are scored by their final evaluation (32
episodes, the weights the run ended with). Random acts uniformly on the same eval seeds.

The bar (issue 16): trained ≥ random + 50% of (published MAPPO − random), MAPPO ≥ IPPO.

The published figure and its reward. Yu et al. 2022 ("The Surprising Effectiveness of PPO in
Cooperative Multi-Agent Games") show MPE Spread as curves (their Fig. 1), not in a table, so no
exact value could be read; a run of the authors' unchanged script (marlbenchmark/on-policy,
train_mpe_spread.sh: 128 envs, 20M steps) is reported converging near −120 (on-policy issue
#49), and EPyMARL's MPE Spread results (Papoudakis et al. 2021) are quoted as about −120, on
a return its maintainer states is divided by the number of agents (uoe-agents/epymarl issue
#29). We take −120. Both are one agent's episode reward in OpenAI's MPE with the
shared reward: every agent receives the sum over agents of −Σ_landmarks(min agent distance)
− its collisions, an agent's count including itself (−1 per agent per step). Over 25 steps that
is paper = 3·D − 75 − C (D: the episode sum of −Σ_landmarks min distance; C: collisions,
2 per colliding pair per step). mpe2's simple_spread_v3 (local_ratio 0.5) gives each agent
0.5·(−Σ min distance) + 0.5·(−1 per other agent it touches), so rlpipe's team return (the sum
over the 3 agents) is 1.5·D − C/2 = (paper + 75) / 2: −120 becomes −22.5. Same agent size
(0.15), physics and 25 steps; mpe2 and OpenAI's MPE (EPyMARL) draw landmarks in [−1, 1]²,
Yu et al.'s fork in [−0.8, 0.8]², so on mpe2 the same policy scores a little lower than the
conversion says (the bar is, if anything, harder). `--published` takes another figure.

Run:  nice python benchmarks/marl.py [--seeds 5] [--steps N] [--jobs 2] [--quick]
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import pathlib
import statistics
import sys
import tempfile
import time
from typing import Dict, List

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

PUBLISHED_PAPER_SCALE = -120.0  # MAPPO, MPE Spread, one agent's shared-reward return (docstring)
EVAL_EPISODES = 32
ENV_ID = "mpe2/simple_spread_v3"


def paper_to_mpe2(paper: float) -> float:
    """A per-agent shared-reward figure (OpenAI MPE, Yu et al.) on mpe2's team-return scale."""
    return (paper + 75.0) / 2.0


def random_team(seed: int, episodes: int = EVAL_EPISODES) -> Dict[str, float]:
    """Mean team return of uniformly random actions; env steps/s of that loop."""
    from rlpipe.envs import MultiAgentEnvManager

    returns: List[float] = []
    steps, start = 0, time.perf_counter()
    with MultiAgentEnvManager(ENV_ID, n_envs=8, seed=seed + 10_000) as env:
        env.reset()
        rng = np.random.default_rng(seed)
        while len(returns) < episodes:
            result = env.step(rng.integers(0, env.action_space.n, (env.n_envs, env.n_agents)))
            steps += env.n_envs
            returns += [e["return"] for e in result.episodes]
    wall = time.perf_counter() - start
    return {"team_return": float(np.mean(returns[:episodes])), "wall_s": wall,
            "steps_per_s": steps / wall}


def trained_team(entry: str, seed: int, steps: int | None) -> Dict[str, float]:
    """Train `entry` with `seed` in a scratch folder; its final team return, wall, steps/s."""
    from rlpipe.training import train

    with tempfile.TemporaryDirectory(prefix=f"marl-{entry}-") as run_dir:
        out = train(entry, seed=seed, max_env_step=steps, run_dir=run_dir + "/run",
                    progress=False,
                    overrides=[f"policy.eval.evaluator.n_episode={EVAL_EPISODES}"])
    return {"team_return": float(out["eval_value"]), "wall_s": float(out["wall_time"]),
            "steps_per_s": out["env_step"] / out["wall_time"]}


def _job(algo: str, seed: int, steps: int | None) -> Dict[str, float]:
    import logging

    logging.getLogger("rlpipe").setLevel(logging.WARNING)
    return random_team(seed) if algo == "random" else trained_team(
        f"simple-spread-{algo}", seed, steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=None,
                        help="env steps per training run (default: the entries' budget)")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time (processes)")
    parser.add_argument("--published", type=float, default=PUBLISHED_PAPER_SCALE,
                        help="MAPPO's published Spread figure on the shared-reward scale")
    parser.add_argument("--quick", action="store_true", help="2 seeds × 3,200 steps (a smoke run)")
    args = parser.parse_args()
    seeds, steps = (2, 3200) if args.quick else (args.seeds, args.steps)
    algos = ("random", "ippo", "mappo")
    results: Dict[str, List[Dict[str, float]]] = {a: [] for a in algos}
    # random first (seconds), then MAPPO and IPPO alternating by seed: a run cut short still
    # has both; each run's figure is printed as it ends
    order = [("random", s) for s in range(seeds)]
    order += [(a, s) for s in range(seeds) for a in ("mappo", "ippo")]
    with cf.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(_job, a, s, steps): (a, s) for a, s in order}
        for future in cf.as_completed(futures):
            algo, seed = futures[future]
            row = dict(future.result(), seed=seed)
            results[algo].append(row)
            print(f"{algo} seed {seed}: team return {row['team_return']:.1f}, "
                  f"{row['wall_s']:.0f} s, {row['steps_per_s']:.0f} env steps/s, load average "
                  f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())} (1/5/15 min)", flush=True)
    for rows in results.values():
        rows.sort(key=lambda r: r["seed"])
    reference = paper_to_mpe2(args.published)
    rand = statistics.mean(r["team_return"] for r in results["random"])
    bar = rand + 0.5 * (reference - rand)
    print(f"simple_spread, {seeds} seeds, {steps or 'entry'} env steps per training run; "
          f"published MAPPO {args.published} (paper scale) = {reference:.1f} (mpe2 team "
          f"return); bar = random + 50% of the gap = {bar:.1f}\n")
    print("| policy | team return (mean ± std over seeds) | per seed | wall s per run "
          "| env steps/s |")
    print("|---|---|---|---|---|")
    means = {}
    for algo in algos:
        rows = results[algo]
        values = [r["team_return"] for r in rows]
        means[algo] = statistics.mean(values)
        spread = statistics.stdev(values) if len(values) > 1 else 0.0
        print(f"| {algo} | {means[algo]:.1f} ± {spread:.1f} | "
              f"{', '.join(f'{v:.1f}' for v in values)} | "
              f"{statistics.mean(r['wall_s'] for r in rows):.1f} | "
              f"{statistics.mean(r['steps_per_s'] for r in rows):.0f} |")
    for algo in ("ippo", "mappo"):
        share = (means[algo] - rand) / (reference - rand)
        print(f"\n{algo}: {share:.0%} of the random→published gap "
              f"({'meets' if means[algo] >= bar else 'misses'} the 50% bar)", end="")
    print(f"\nMAPPO {'≥' if means['mappo'] >= means['ippo'] else '<'} IPPO "
          f"({means['mappo']:.1f} vs {means['ippo']:.1f})")


if __name__ == "__main__":
    main()
