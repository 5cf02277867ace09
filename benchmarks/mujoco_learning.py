"""MuJoCo learning curves: train a zoo entry for a budget and put its result beside the
published figure (issue #18).

    python benchmarks/mujoco_learning.py --entry hopper-sac --budget 15000 --set replay.min_samples=1000 \
        --set policy.collect.random_collect_size=1000    # a CPU-sized look
    python benchmarks/mujoco_learning.py --entry halfcheetah-sac --budget 1000000   # a GPU machine

Writes the run folder, the learning curve (`rlpipe plot`) and a JSON line under
benchmarks/results/learning/, and prints env steps/s.
"""
from _learning_budget import parse, run

RL_ZOO3 = "rl-zoo3 benchmark.md, one run, -v3 envs"
PUBLISHED = {
    "hopper-sac": (2325.5, 1_000_000, RL_ZOO3),
    "halfcheetah-sac": (9535.5, 1_000_000, RL_ZOO3),
    "hopper-td3": (3606.4, 1_000_000, RL_ZOO3),
    "halfcheetah-ppo": (5819.1, 1_000_000, RL_ZOO3),
}

if __name__ == "__main__":
    run(parse(__doc__, PUBLISHED, "hopper-sac", 15_000), PUBLISHED)
