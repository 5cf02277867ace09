"""rtpendulum-sac on N seeds, and why the collector gets a process of its own.

Part 1 (`--seeds`): `rlpipe train rtpendulum-sac` (learner here, collector and evaluator in child
processes) per seed; reported per run: wall time, the first env step whose eval return is
>= -400, final and best eval return, and the collector's overrun rate (`collect/overrun_rate`,
the share of time steps that started after their nominal end plus rtgym's elasticity). The bar
(issue 17): eval return >= -400 within 10k real-time steps on 4/5 seeds, overrun rate < 1%.

Part 2 (`--steps`): the overrun rate of the real-time pendulum stepped by a small SAC actor in
this process, alone, then beside a SAC learner updating in a thread of the same process (the
learner holds the GIL between torch calls). Both phases run in this one call, one after the
other; the ratio beside/alone is the figure to read.

The 1-minute load average is printed beside every figure: on a shared machine overruns grow
with the load (the scheduler's latency), whatever the pipeline does.

Run:  python benchmarks/realtime.py [--seeds 0 1 2 3 4] [--steps 1000] [--hz 20]
      [--max-env-step 10000]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from rlpipe.envs import make_rtpendulum  # noqa: E402
from rlpipe.policies import SACPolicy  # noqa: E402
from rlpipe.training import train  # noqa: E402
from rlpipe.pipelines.offpolicy import resolve_config  # noqa: E402
from rlpipe.zoo.rtpendulum.sac import config as ENTRY_CONFIG  # noqa: E402

BAR = -400.0


def load() -> str:
    return "load %.2f %.2f %.2f" % os.getloadavg()


def run_seed(seed: int, max_env_step: int, root: str) -> dict:
    run_dir = os.path.join(root, f"seed{seed}")
    t0 = time.perf_counter()
    load0 = os.getloadavg()[0]
    train("rtpendulum-sac", seed=seed, max_env_step=max_env_step, run_dir=run_dir,
          progress=False)
    wall = time.perf_counter() - t0
    rows = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl"))]
    evals = [(r["env_step"], r["eval/return_mean"]) for r in rows if "eval/return_mean" in r]
    rates = [r["collect/overrun_rate"] for r in rows if "collect/overrun_rate" in r]
    steps = [r["collect/rt_time_steps"] for r in rows if "collect/rt_time_steps" in r]
    reached = next((step for step, ret in evals if ret >= BAR), None)
    return dict(seed=seed, wall_s=wall, reached_at=reached,
                final=evals[-1][1] if evals else None,
                best=max((ret for _, ret in evals), default=None),
                overrun_rate=rates[-1] if rates else None,
                time_steps=steps[-1] if steps else None,
                load=(load0 + os.getloadavg()[0]) / 2)


def make_sac(env) -> SACPolicy:
    cfg = resolve_config(SACPolicy, ENTRY_CONFIG)
    return SACPolicy(cfg.policy, env.observation_space, env.action_space)


def collect(env, policy, steps: int) -> dict:
    """Step `env` `steps` times, acting with `policy`; the env's overrun counts over them."""
    before = env.unwrapped.overrun_stats()
    obs, _ = env.reset(seed=0)
    for _ in range(steps):
        with torch.no_grad():
            act = policy.collect_mode.forward(obs[None])["action"][0]
        obs, _, term, trunc, _ = env.step(np.asarray(act, dtype=np.float32))
        if term or trunc:
            obs, _ = env.reset()
    after = env.unwrapped.overrun_stats()
    n = after["time_steps"] - before["time_steps"]
    over = after["overruns"] - before["overruns"]
    return dict(time_steps=n, overruns=over, rate=over / n if n else 0.0,
                max_late_s=after["max_late_s"])


def learner_loop(policy, obs_dim: int, stop: threading.Event, counter: list,
                 errors: list) -> None:
    try:
        _learn(policy, obs_dim, stop, counter)
    except Exception as err:  # re-raised by the caller after join()
        errors.append(err)


def _learn(policy, obs_dim: int, stop: threading.Event, counter: list) -> None:
    rng = np.random.default_rng(0)
    while not stop.is_set():
        batch = dict(obs=rng.standard_normal((128, obs_dim)).astype(np.float32),
                     action=rng.uniform(-2, 2, (128, 1)).astype(np.float32),
                     reward=rng.standard_normal(128).astype(np.float32),
                     next_obs=rng.standard_normal((128, obs_dim)).astype(np.float32),
                     terminated=np.zeros(128, dtype=np.float32))
        policy.learn_mode.forward(batch)
        counter[0] += 1


def same_process(steps: int, hz: float) -> None:
    torch.set_num_threads(1)
    env = make_rtpendulum(hz=hz)
    actor, learner = make_sac(env), make_sac(env)
    try:
        print(f"collection alone ({steps} steps at {hz:g} Hz) ... [{load()}]", flush=True)
        alone = collect(env, actor, steps)
        print(f"  overruns {alone['overruns']}/{alone['time_steps']} = {alone['rate']:.2%}  "
              f"[{load()}]", flush=True)
        stop, counter, errors = threading.Event(), [0], []
        obs_dim = int(np.prod(env.observation_space.shape))
        thread = threading.Thread(target=learner_loop,
                                  args=(learner, obs_dim, stop, counter, errors), daemon=True)
        thread.start()
        t0 = time.perf_counter()
        try:
            beside = collect(env, actor, steps)
        finally:
            stop.set()
            thread.join()
        if errors:
            raise RuntimeError("the SAC learner thread failed") from errors[0]
        ups = counter[0] / (time.perf_counter() - t0)
        print(f"collection beside a SAC learner thread in the same process "
              f"({ups:.0f} updates/s): overruns {beside['overruns']}/{beside['time_steps']} = "
              f"{beside['rate']:.2%}  [{load()}]", flush=True)
        ratio = beside["rate"] / alone["rate"] if alone["rate"] else float("inf")
        print(f"  overrun rate beside / alone: {ratio:.1f}x" if alone["rate"] else
              f"  alone had no overrun; beside: {beside['rate']:.2%}")
    finally:
        env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="*", default=[0, 1])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--hz", type=float, default=20.0, help="clock of the part-2 env")
    parser.add_argument("--max-env-step", type=int, default=10_000)
    args = parser.parse_args()
    print(f"cpus {os.cpu_count()}  [{load()}]", flush=True)
    if args.steps:
        same_process(args.steps, args.hz)
    results = []
    with tempfile.TemporaryDirectory() as root:
        for seed in args.seeds:
            r = run_seed(seed, args.max_env_step, root)
            results.append(r)
            print(f"seed {seed}: wall {r['wall_s']:.0f} s, eval >= {BAR:.0f} at env step "
                  f"{r['reached_at']}, final {r['final']:.1f}, best {r['best']:.1f}, overrun rate "
                  f"{r['overrun_rate']:.2%} of {r['time_steps']:.0f} time steps "
                  f"[mean load {r['load']:.2f}]", flush=True)
    if results:
        ok = sum(r["reached_at"] is not None and r["overrun_rate"] < 0.01 for r in results)
        print(f"bar (eval >= {BAR:.0f} within {args.max_env_step} steps and overrun rate < 1%): "
              f"{ok}/{len(results)} seeds  [{load()}]")


if __name__ == "__main__":
    main()
