"""MPE simple_spread (mpe2, 3 agents): team returns of hand-written steering policies, to place
the trained entries (benchmarks/marl.py) between random and a coordinated team.

Each agent steers to a target landmark with the discrete action that best reduces
(target offset − 0.5 × own velocity), and stays still within 0.05 of it. Targets:
  nearest: every agent its nearest landmark (no coordination: two may share one);
  by-id:   agent i the landmark listed i-th (a fixed split, what an agent id allows);
  assigned: the split with the least summed distance, recomputed each step (coordinated).
Team return = the episode's rewards summed over the agents, mpe2's reward (as marl.py).

Run:  python benchmarks/marl_scripted.py [--episodes 64]
"""
from __future__ import annotations

import argparse
import itertools
from typing import Dict, List

import numpy as np

# mpe2 simple_spread observation of one agent: own velocity (0:2), own position (2:4), the
# landmarks' offsets (4:10), the other agents' offsets, communication
_VEL, _LANDMARKS = slice(0, 2), slice(4, 10)
_MODES = ("nearest", "by-id", "assigned")


def steer(obs: np.ndarray, offset: np.ndarray) -> int:
    """Discrete action (0 stay, 1 −x, 2 +x, 3 −y, 4 +y) towards a landmark at `offset`."""
    want = offset - 0.5 * obs[_VEL]
    if np.abs(want).max() < 0.05:
        return 0
    axis = int(np.argmax(np.abs(want)))
    return (2 if want[0] > 0 else 1) if axis == 0 else (4 if want[1] > 0 else 3)


def targets(mode: str, offsets: List[np.ndarray]) -> List[np.ndarray]:
    """Each agent's landmark offset under `mode` (offsets[i]: agent i's [n_landmarks, 2])."""
    n = len(offsets)
    if mode == "nearest":
        return [o[np.argmin(np.linalg.norm(o, axis=1))] for o in offsets]
    if mode == "by-id":
        return [o[i] for i, o in enumerate(offsets)]
    best = min(itertools.permutations(range(n)),
               key=lambda p: sum(np.linalg.norm(offsets[i][p[i]]) for i in range(n)))
    return [offsets[i][best[i]] for i in range(n)]


def team_returns(mode: str, episodes: int, seed: int) -> List[float]:
    from mpe2 import simple_spread_v3

    env = simple_spread_v3.parallel_env(N=3, max_cycles=25)
    out = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        total = 0.0
        while env.agents:
            names = list(obs)
            goal = targets(mode, [obs[a][_LANDMARKS].reshape(-1, 2) for a in names])
            obs, reward, _, _, _ = env.step({a: steer(obs[a], g) for a, g in zip(names, goal)})
            total += float(sum(reward.values()))
        out.append(total)
    env.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--seed", type=int, default=10_000, help="first episode's reset seed")
    args = parser.parse_args()
    results: Dict[str, List[float]] = {m: team_returns(m, args.episodes, args.seed)
                                       for m in _MODES}
    print(f"| scripted policy | team return (mean ± std over {args.episodes} episodes) |")
    print("|---|---|")
    for mode, values in results.items():
        print(f"| {mode} | {np.mean(values):.1f} ± {np.std(values):.1f} |")


if __name__ == "__main__":
    main()
