"""What the multi-agent env manager costs over a bare loop of PettingZoo envs, in the same run.

Both sides step MPE simple_spread (3 agents, 25-step episodes) with random actions and reset
each env when its agents are all done. The baseline is a Python loop over `n` parallel envs
with dict actions; the manager (mode sync) adds the packing into [n, A, ...] arrays, masks,
the global state, true final observations, episode returns and crash recovery. Rounds
alternate; the best of each is kept. Figures are env steps per second (vector rows; each is one
step of all 3 agents).

Run:  python benchmarks/marl_env_throughput.py [--quick]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from rlpipe.envs import MultiAgentEnvManager  # noqa: E402


def bare(n_envs: int, steps: int) -> float:
    from mpe2 import simple_spread_v3

    envs = [simple_spread_v3.parallel_env() for _ in range(n_envs)]
    for i, e in enumerate(envs):
        e.reset(seed=i)
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    names = envs[0].possible_agents
    for _ in range(steps):
        actions = rng.integers(0, 5, (n_envs, len(names)))  # drawn as the manager's are
        for e, row in zip(envs, actions):
            e.step({a: row[k] for k, a in enumerate(names) if a in e.agents})
            e.state()  # the manager reads the global state every step too
            if not e.agents:
                e.reset()
    return steps * n_envs / (time.perf_counter() - start)


def managed(n_envs: int, steps: int) -> float:
    with MultiAgentEnvManager("mpe2/simple_spread_v3", n_envs=n_envs, seed=0) as env:
        env.reset()
        rng = np.random.default_rng(0)
        start = time.perf_counter()
        for _ in range(steps):
            env.step(rng.integers(0, 5, (n_envs, env.n_agents)))
        return steps * n_envs / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and rounds")
    args = parser.parse_args()
    steps, rounds = (100, 2) if args.quick else (1000, 3)
    print(f"{'n_envs':>6} {'bare steps/s':>13} {'manager steps/s':>16} {'manager/bare':>13}")
    for n_envs in (1, 8):
        best_bare = best_managed = 0.0
        for _ in range(rounds):
            best_bare = max(best_bare, bare(n_envs, steps))
            best_managed = max(best_managed, managed(n_envs, steps))
        print(f"{n_envs:>6} {best_bare:>13,.0f} {best_managed:>16,.0f} "
              f"{best_managed / best_bare:>13.2f}")


if __name__ == "__main__":
    main()
