"""What `rlpipe tune` costs beside the training it runs, and what --jobs 2 buys.

    .venv/bin/python benchmarks/tune_overhead.py            # 4 trials of 4096 env steps
    .venv/bin/python benchmarks/tune_overhead.py --quick    # 2 trials of 1024 env steps

All in one run, on PPO CartPole with every parameter fixed (each trial trains the same config,
so the runs are comparable):
- baseline: `train()` of that config, N times in a row in this process;
- `rlpipe tune --jobs 1` over N trials (study in SQLite, an eval report per evaluation,
  best.yaml at the end): wall time as a ratio to the baseline;
- `rlpipe tune --jobs 2` over the same N trials (two worker processes, one torch thread each):
  wall time as a ratio to --jobs 1 (on a 2-core machine at most 2x; less under load).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

SPACE = ("space:\n  n_steps: 32\n  batch_size: 256\n  n_epochs: 5\n  net_arch: small\n"
         "  activation_fn: tanh\n  one_minus_gamma: 0.02\n  one_minus_gae_lambda: 0.2\n"
         "  ent_coef: 0.0\n  clip_range: 0.2\n  max_grad_norm: 0.5\n  learning_rate: 0.001\n")
FIXED = {"policy.collect.n_sample": 256, "policy.learn.batch_size": 256,
         "policy.learn.epoch_per_collect": 5, "policy.model.hidden": (64, 64),
         "policy.model.activation": "tanh", "policy.learn.gamma": 0.98,
         "policy.learn.gae_lambda": 0.8, "policy.learn.entropy_coef": 0.0,
         "policy.learn.clip_ratio": 0.2, "policy.learn.grad_clip": 0.5, "policy.learn.lr": 0.001}
EVAL = ["policy.eval.evaluator.eval_freq=20", "policy.eval.evaluator.n_episode=3"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    trials, budget = (2, 1024) if args.quick else (4, 4096)
    from rlpipe.cli import main as cli
    from rlpipe.training import train
    from rlpipe.tools.config_file import as_override

    root = tempfile.mkdtemp(prefix="tune-bench-")
    space = os.path.join(root, "space.yaml")
    with open(space, "w") as f:
        f.write(SPACE)
    overrides = [*EVAL, *(as_override(k, v) for k, v in FIXED.items())]
    start = time.perf_counter()
    for i in range(trials):
        train("cartpole-ppo", max_env_step=budget, progress=False, overrides=overrides,
              run_dir=os.path.join(root, "plain", str(i)))
    plain = time.perf_counter() - start
    walls = {}
    for jobs in (1, 2):
        start = time.perf_counter()
        code = cli(["tune", "cartpole-ppo", "--trials", str(trials), "--budget", str(budget),
                    "--jobs", str(jobs), "--space", space, "--out", os.path.join(root, f"j{jobs}"),
                    "--no-progress", *(a for o in EVAL for a in ("--set", o))])
        walls[jobs] = time.perf_counter() - start
        if code != 0:
            sys.exit(f"rlpipe tune --jobs {jobs} failed (exit {code})")
    load = os.getloadavg()[0]
    print(f"{trials} trials x {budget} env steps, load average {load:.1f}, {os.cpu_count()} cores")
    print(f"{f'train() x {trials}:':16s}{plain:7.1f} s")
    print(f"{'tune --jobs 1:':16s}{walls[1]:7.1f} s  wall time {walls[1] / plain:.2f}x the plain runs")
    print(f"{'tune --jobs 2:':16s}{walls[2]:7.1f} s  speed-up {walls[1] / walls[2]:.2f}x over "
          f"--jobs 1")


if __name__ == "__main__":
    main()
