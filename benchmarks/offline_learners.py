"""CPU time per gradient step of the offline actor-critic learners (IQL, TD3+BC, CQL) as the
offline pipeline runs them, in this checkout against another one (an older commit).

    git worktree add --detach /tmp/rlpipe-old e0a9f1e
    python benchmarks/offline_learners.py --baseline /tmp/rlpipe-old [--algos iql td3-bc cql]
        [--size zoo|default] [--rounds 5] [--steps 300] [--compile] [--flush-denormal]
    python benchmarks/offline_learners.py --baseline . --adam

One step is what an offline run does per iteration: `offline_data_fetcher` samples a batch from
an `OfflineDataset` (50 random Pendulum-shaped episodes of 200 steps) and `trainer` hands it to
`policy.learn_mode.forward`. `--size zoo` uses the networks and batch of the pendulum-iql,
pendulum-td3bc and pendulum-cql entries (64-64 MLPs, batch 128, their learn settings; CQL with
its Lagrange threshold); `--size default` each policy's own defaults (256-256 or 3 × 256, batch
256). Both checkouts' steps are built in this one process (each from its own fresh import of
`rlpipe`), so that both see the same machine: one torch thread, a warm-up of 5 steps each, then
rounds of `--steps` steps of each side timed by the process's CPU time (`time.process_time`),
the side that goes first alternating by round. Printed:
the median CPU-ms per 1000 steps of each side, the speedup (old / new), and the aten operations
per step of each side (forward and backward, counted by a dispatch mode: a figure that load on
the machine does not move; a compiled step is counted as it runs eagerly), and the wall time of each side's first step, which holds the compilation.
`--compile` sets `policy.learn.compile` on this checkout's side; with `--baseline` naming this
checkout too it compares compiled steps against eager ones of the same code;
`--flush-denormal` times this checkout's side with denormal floats flushed to zero.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Dict, List

import torch

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


def build_step(algo: str, size: str, compile_learn: bool = False) -> Callable[[], None]:
    """One offline iteration (fetch a batch, one learn step) of `algo` at `size`, with
    `policy.learn.compile` set when `compile_learn`."""
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
    if compile_learn:
        cfg["learn"] = {**cfg.get("learn", {}), "compile": True}
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

    # compiled functions run eagerly here: torch.compile does not trace under a dispatch mode
    with torch.compiler.set_stance("force_eager"), Count() as counter:
        for _ in range(n):
            step()
    return sum(counter.ops.values()) / n


def build_from(root: Path, algo: str, size: str,
               compile_learn: bool = False) -> Callable[[], None]:
    """`build_step` with the `rlpipe` of the checkout at `root`: the package is imported afresh
    from there, and the step keeps the modules it was built from, so that steps of two checkouts
    live side by side in this process."""
    for name in [n for n in sys.modules if n == "rlpipe" or n.startswith("rlpipe.")]:
        del sys.modules[name]
    sys.path.insert(0, str(root))
    try:
        step = build_step(algo, size, compile_learn)
        import rlpipe
        if not Path(rlpipe.__file__).resolve().is_relative_to(root.resolve()):
            raise RuntimeError(f"offline_learners: rlpipe came from {rlpipe.__file__}, not "
                               f"from {root}; run the script without PYTHONPATH set")
        return step
    finally:
        sys.path.remove(str(root))


def cpu_ms_per_1000(step: Callable[[], None], steps: int) -> float:
    start = time.process_time()
    for _ in range(steps):
        step()
    return (time.process_time() - start) * 1e6 / steps


def adam_step_times(steps: int = 3000) -> Dict[str, float]:
    """CPU-µs of one Adam step over two 64-wide MLPs (a critic pair's size): torch's
    `step()`, `adam_step` (the fused kernel called directly) and `torch.compile(step)`."""
    sys.path.insert(0, str(ROOT))
    from rlpipe.policies._common import adam, adam_step

    def mlp() -> torch.nn.Module:
        return torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.ReLU(),
                                   torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))

    out = {}
    for name in ("step()", "adam_step", "compiled step()"):
        params = [*mlp().parameters(), *mlp().parameters()]
        for p in params:
            p.grad = torch.randn_like(p)
        opt = adam(params, 1e-3, torch.device("cpu"))
        step = {"step()": opt.step, "adam_step": lambda: adam_step(opt),
                "compiled step()": torch.compile(opt.step)}[name]
        for _ in range(3):  # state, compilation
            step()
        start = time.process_time()
        for _ in range(steps):
            step()
        out[name] = (time.process_time() - start) * 1e6 / steps
    return out


def main(argv: List[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", type=Path, required=True,
                    help="a checkout of the older commit (e.g. a `git worktree add --detach`)")
    ap.add_argument("--algos", nargs="+", default=list(ZOO), choices=list(ZOO))
    ap.add_argument("--size", choices=("zoo", "default"), default="zoo")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--compile", action="store_true",
                    help="this checkout's side with policy.learn.compile=True (with --baseline "
                         "set to this checkout: compiled against eager)")
    ap.add_argument("--flush-denormal", action="store_true",
                    help="this checkout's side timed with torch.set_flush_denormal(True)")
    ap.add_argument("--adam", action="store_true",
                    help="only time one Adam step three ways (torch's step(), adam_step, "
                         "compiled step()) and exit")
    args = ap.parse_args(argv)
    if args.adam:
        torch.set_num_threads(1)
        for name, us in adam_step_times().items():
            print(f"{name:<16} {us:8.1f} CPU-µs per Adam step")
        return
    if not (args.baseline / "rlpipe" / "__init__.py").is_file():
        raise SystemExit(f"offline_learners: --baseline {args.baseline} holds no rlpipe package; "
                         f"make one with `git worktree add --detach DIR COMMIT`")
    print(f"{'algorithm':<8} {'old CPU-ms/1000':>16} {'new CPU-ms/1000':>16} {'speedup':>8} "
          f"{'old ops':>8} {'new ops':>8} {'old 1st step s':>15} {'new 1st step s':>15}")
    torch.set_num_threads(1)
    for algo in args.algos:
        steps = {"old": build_from(args.baseline, algo, args.size),
                 "new": build_from(ROOT, algo, args.size, args.compile)}
        first: Dict[str, float] = {}
        for name, step in steps.items():
            # the first step holds the compilation, when there is one: wall time, as
            # inductor's C++ compiler runs in child processes
            start = time.perf_counter()
            step()
            first[name] = time.perf_counter() - start
            for _ in range(5):  # warm-up: allocator, optimizer state
                step()
        runs: Dict[str, List[float]] = {"old": [], "new": []}
        for r in range(args.rounds):
            for name in (("old", "new") if r % 2 == 0 else ("new", "old")):
                torch.set_flush_denormal(args.flush_denormal and name == "new")
                runs[name].append(cpu_ms_per_1000(steps[name], args.steps))
        torch.set_flush_denormal(False)
        old, new = statistics.median(runs["old"]), statistics.median(runs["new"])
        print(f"{algo:<8} {old:>16.0f} {new:>16.0f} {old / new:>8.2f} "
              f"{count_ops(steps['old']):>8.0f} {count_ops(steps['new']):>8.0f} "
              f"{first['old']:>15.2f} {first['new']:>15.2f}", flush=True)

if __name__ == "__main__":
    main()
