"""Atari learning curves: train a zoo entry for a budget and put its result beside the published
figure (issue #18).

    python benchmarks/atari_learning.py --entry pong-ppo --budget 25000      # 100k frames, CPU-sized
    python benchmarks/atari_learning.py --entry pong-dqn --budget 2500000    # 10M frames: a GPU machine

Budgets are env (agent) steps of 4 frames. Writes the run folder, the learning curve
(`rlpipe plot`) and a JSON line under benchmarks/results/learning/, and prints env steps/s.
"""
from _learning_budget import parse, run

RL_ZOO3 = "rl-zoo3 benchmark.md, one run, NoFrameskip-v4"
PUBLISHED = {
    "pong-dqn": (20.6, 10_000_000, RL_ZOO3),
    "breakout-dqn": (358.3, 10_000_000, RL_ZOO3),
    "pong-ppo": (21.0, 10_000_000, RL_ZOO3),
    "breakout-ppo": (398.0, 10_000_000, RL_ZOO3),
}

if __name__ == "__main__":
    run(parse(__doc__, PUBLISHED, "pong-ppo", 25_000), PUBLISHED)
