"""Scale-out: collection env steps/s of one script run in one process and with 1 and 2 collectors.

The workload is env-bound: CartPole-v1 whose every step also burns `--step-ms` ms of CPU (a busy
loop, as a physics simulator would), 4 envs per process, a 2x64 DQN acting epsilon-greedily, and
a light learner (8 updates of 64 per 256 env steps, so collection dominates). The same `main()`
runs three ways in one run of this script:

- `single async`: one process, `task.start(async_mode=True)` (collection overlaps training);
- `1 collector` / `2 collectors`: `rlpipe.engine.parallel.launch(main, collectors=k)` on a local
  Ray (one learner actor + k collector actors exchanging data and weights).

Env steps/s is what the learner received, measured over `--seconds` after a warm-up of
`--warmup` seconds; the three alternate for `--rounds` rounds and the best of each is kept (the
machine may be shared). Target on a 2-core machine: 2 collectors >= 1.6x one.

Run:  python benchmarks/scale_out.py [--seconds 10] [--rounds 3] [--step-ms 1.0] [--quick]
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time
from typing import Any, Dict, List, Tuple

import gymnasium as gym
from easydict import EasyDict

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from rlpipe.contexts import OnlineRLContext  # noqa: E402
from rlpipe.data import ReplayBuffer, SampleRatioController  # noqa: E402
from rlpipe.engine import Role, contract, parallel, task  # noqa: E402
from rlpipe.envs import EnvManager  # noqa: E402
from rlpipe.middleware import (OffPolicyLearner, StepCollector, data_pusher,  # noqa: E402
                               eps_greedy_handler, termination_checker)
from rlpipe.middleware.exchange import Exchange  # noqa: E402
from rlpipe.policies import DQNPolicy  # noqa: E402

N_ENVS, N_SAMPLE, UPDATES = 4, 256, 8


class BurnStep(gym.Wrapper):
    """CartPole whose step costs `ms` more milliseconds of CPU."""

    def __init__(self, env: gym.Env, ms: float) -> None:
        super().__init__(env)
        self.seconds = ms / 1000.0

    def step(self, action: Any) -> Any:
        end = time.perf_counter() + self.seconds
        while time.perf_counter() < end:
            pass
        return self.env.step(action)


class SlowCartPole:
    """A picklable env factory (Ray ships `main`'s arguments to the actors)."""

    def __init__(self, ms: float) -> None:
        self.ms = ms

    def __call__(self) -> gym.Env:
        return BurnStep(gym.make("CartPole-v1"), self.ms)


@contract(reads=("env_step",), writes=(), role=Role.LEARNER)
class RateMeter:
    """Learner side: (wall time, env_step) after every iteration."""

    def __init__(self) -> None:
        self.samples: List[Tuple[float, int]] = []

    def __call__(self, ctx: Any) -> None:
        self.samples.append((time.perf_counter(), ctx.env_step))

    def rate(self, warmup: float) -> Dict[str, float]:
        t0 = self.samples[0][0] + warmup
        window = [s for s in self.samples if s[0] >= t0]
        (ta, sa), (tb, sb) = window[0], window[-1]
        return {"steps_per_s": (sb - sa) / (tb - ta), "seconds": tb - ta, "env_steps": sb - sa}


def main(step_ms: float, seconds: float, warmup: float) -> Dict[str, float]:
    """One script for every process: the learner (or the single process) returns the rate."""
    link = parallel.link()
    cfg = EasyDict(policy=dict(collect=dict(n_sample=N_SAMPLE, random_collect_size=0),
                               learn=dict(batch_size=64, update_per_collect=UPDATES),
                               other=dict(eps=dict(type="linear", start=0.1, end=0.1, decay=1))),
                   parallel=dict(publish_every=UPDATES, batches_per_iter=1))
    seed = 0 if link is None else 1 + link.index + 100 * int(link.role is Role.COLLECTOR)
    env = EnvManager(SlowCartPole(step_ms), n_envs=N_ENVS, seed=seed, mode="sync")
    policy = DQNPolicy({"model": {"hidden": (64, 64)}, "learn": {"batch_size": 64},
                        "seed": seed}, env.observation_space, env.action_space)
    buffer_ = ReplayBuffer(200_000, seed=0, controller=SampleRatioController(
        min_samples=N_SAMPLE, max_updates_per_step=UPDATES / N_SAMPLE))
    meter = RateMeter()
    exchange = Exchange(cfg, policy, link) if link is not None else None
    try:
        with task.start(async_mode=link is None, ctx=OnlineRLContext()):
            if exchange is not None:
                task.use(exchange.receive)
            task.use(eps_greedy_handler(cfg))
            task.use(StepCollector(cfg, policy.collect_mode, env))
            task.use(data_pusher(cfg, buffer_))
            task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
            if exchange is not None:
                task.use(exchange.send)
            task.use(meter)
            task.use(termination_checker(max_wall_time=warmup + seconds))
            task.run()
    finally:
        env.close()
    return meter.rate(warmup) if link is None or link.role is Role.LEARNER else {}


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="measured window per round")
    parser.add_argument("--warmup", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=3, help="best of this many rounds each")
    parser.add_argument("--step-ms", type=float, default=1.0)
    parser.add_argument("--quick", action="store_true", help="1 round of 5 s windows")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.warmup, args.rounds = 5.0, 3.0, 1
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    call = (args.step_ms, args.seconds, args.warmup)
    names = ["single async", "1 collector", "2 collectors"]
    best: Dict[str, float] = {}
    load = os.getloadavg()[0]
    # one local Ray for every round, as launch() would start it (actors at nice 0)
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False,
             configure_logging=False, _system_config={"worker_niceness": 0})
    try:
        for r in range(args.rounds):  # rounds alternate, so a busy spell hits every pipeline
            for name in names:
                k = 0 if name.startswith("single") else int(name[0])
                rate = (main(*call) if k == 0 else
                        parallel.launch(main, collectors=k, args=call))["steps_per_s"]
                best[name] = max(best.get(name, 0.0), rate)
                print(f"round {r + 1}: {name:<14} {rate:8.0f} env steps/s", flush=True)
    finally:
        ray.shutdown()
    base = best["1 collector"]
    print(f"\nenv: CartPole-v1 + {args.step_ms} ms CPU per step, {N_ENVS} envs per process; "
          f"{os.cpu_count()} CPUs; best of {args.rounds} round(s) of {args.seconds:.0f} s after "
          f"{args.warmup:.0f} s warm-up; load average {load:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after")
    print("| pipeline | env steps/s | vs 1 collector |\n|---|---|---|")
    for name in names:
        print(f"| {name} | {best[name]:.0f} | {best[name] / base:.2f}x |")


if __name__ == "__main__":
    run()
