"""CPU time per gradient step of the offline actor-critic learners (IQL, TD3+BC, CQL) as the
offline pipeline runs them, in this checkout against another one (an older commit).

    git worktree add --detach /tmp/rlpipe-old e0a9f1e
    python benchmarks/offline_learners.py --baseline /tmp/rlpipe-old [--algos iql td3-bc cql]
        [--size zoo|default] [--rounds 5] [--steps 300]

One step is what an offline run does per iteration: `offline_data_fetcher` samples a batch from
an `OfflineDataset` (50 random Pendulum-shaped episodes of 200 steps) and `trainer` hands it to
`policy.learn_mode.forward`. `--size zoo` uses the networks and batch of the pendulum-iql,
pendulum-td3bc and pendulum-cql entries (64-64 MLPs, batch 128, their learn settings; CQL with
its Lagrange threshold); `--size default` each policy's own defaults (256-256 or 3 × 256, batch
256). Each measurement runs in a fresh process with the checkout's `rlpipe` first on the path:
one torch thread, a warm-up of 5 steps, then `--steps` steps timed by the process's CPU time
(`time.process_time`); the two checkouts alternate which goes first, round by round. Printed:
the median CPU-ms per 1000 steps of each side, the speedup (old / new), and the aten operations
per step of each side (forward and backward, counted by a dispatch mode: a figure that load on
the machine does not move).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Dict, List

ROOT = Path(__file__).resolve().parents[1]
ZOO: Dict[str, Dict[str, Any]] = {
    "iql": dict(model=dict(actor_hidden=(64, 64), critic_hidden=(64, 64), value_hidden=(64, 64)),
                learn=dict(batch_size=128, actor_lr=1e-3, critic_lr=1e-3, value_lr=1e-3,
                           actor_lr_cosine_steps=8000, reward_norm="return_range")),
    "td3-bc": dict(model=dict(actor_hidden=(64, 64), critic_hidden=(64, 64)),
                   learn=dict(batch_size=128, actor_lr=1e-3, critic_lr=1e-3, alpha=100.0)),
    "cql": dict(model=dict(actor_hidden=(64, 64), critic_hidden=(64, 64)),
                learn=dict(batch_size=128, actor_lr=1e-3, critic_lr=1e-3, alpha_lr=1e-3,
                           cql_alpha=1.0, lagrange_threshold=5.0, cql_n_actions=10)),
}


def build_step(algo: str, size: str) -> Callable[[], None]:
    """One offline iteration (fetch a batch, one learn step) of `algo` at `size`."""
    import gymnasium as gym
    import numpy as np
    from easydict import EasyDict

    from rlpipe.contexts import OfflineRLContext
    from rlpipe.data import OfflineDataset
    from rlpipe.middleware.learner import trainer
    from rlpipe.middleware.offline import offline_data_fetcher
    from rlpipe.policies import get_policy

    obs_space = gym.spaces.Box(-8.0, 8.0, (3,), np.float32)
    action_space = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
    rng = np.random.default_rng(0)
    episodes = [dict(observations=rng.normal(size=(201, 3)).astype(np.float32),
                     actions=rng.uniform(-2, 2, (200, 1)).astype(np.float32),
                     rewards=rng.normal(size=200).astype(np.float32),
                     terminations=np.zeros(200, bool),
                     truncations=np.r_[np.zeros(199, bool), True]) for _ in range(50)]
    dataset = OfflineDataset.from_episodes(episodes, obs_space, action_space)
    cfg = {**(ZOO[algo] if size == "zoo" else {}), "seed": 0}
    policy = get_policy(algo)(cfg, obs_space, action_space)
    if algo == "iql":
        policy.set_return_range(float(dataset.episode_returns.min()),
                                float(dataset.episode_returns.max()))
    if algo == "td3-bc":
        policy.set_obs_normalizer(*dataset.obs_stats())
    fetch = offline_data_fetcher(
        EasyDict(policy=dict(learn=dict(batch_size=policy.cfg.learn.batch_size))), dataset)
    learn = trainer(None, policy.learn_mode)
    ctx = OfflineRLContext()

    def step() -> None:
        fetch(ctx)
        learn(ctx)

    return step


def count_ops(step: Callable[[], None], n: int = 10) -> float:
    """aten operations per step (forward and backward)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops: Counter = Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops[func] += 1
            return func(*args, **(kwargs or {}))

    with Count() as counter:
        for _ in range(n):
            step()
    return sum(counter.ops.values()) / n


def worker(algo: str, size: str, steps: int) -> None:
    import torch

    torch.set_num_threads(1)
    step = build_step(algo, size)
    for _ in range(5):
        step()
    start = time.process_time()
    for _ in range(steps):
        step()
    ms = (time.process_time() - start) * 1e6 / steps
    print(json.dumps({"ms_per_1000": ms, "ops": count_ops(step)}))


def measure(root: Path, algo: str, size: str, steps: int) -> Dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, __file__, "--worker", algo, size, str(steps)],
                          cwd=root, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"offline_learners: the {algo} worker in {root} failed: "
                           f"{done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: List[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", type=Path, required=True,
                    help="a checkout of the older commit (e.g. a `git worktree add --detach`)")
    ap.add_argument("--algos", nargs="+", default=list(ZOO), choices=list(ZOO))
    ap.add_argument("--size", choices=("zoo", "default"), default="zoo")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args(argv)
    if not (args.baseline / "rlpipe" / "__init__.py").is_file():
        raise SystemExit(f"offline_learners: --baseline {args.baseline} holds no rlpipe package; "
                         f"make one with `git worktree add --detach DIR COMMIT`")
    print(f"{'algorithm':<8} {'old CPU-ms/1000':>16} {'new CPU-ms/1000':>16} {'speedup':>8} "
          f"{'old ops':>8} {'new ops':>8}")
    for algo in args.algos:
        runs: Dict[str, List[Dict[str, float]]] = {"old": [], "new": []}
        for r in range(args.rounds):
            sides = [("old", args.baseline), ("new", ROOT)]
            for name, root in (sides if r % 2 == 0 else sides[::-1]):
                runs[name].append(measure(root, algo, args.size, args.steps))
        old = statistics.median(x["ms_per_1000"] for x in runs["old"])
        new = statistics.median(x["ms_per_1000"] for x in runs["new"])
        print(f"{algo:<8} {old:>16.0f} {new:>16.0f} {old / new:>8.2f} "
              f"{runs['old'][0]['ops']:>8.0f} {runs['new'][0]['ops']:>8.0f}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        main()
