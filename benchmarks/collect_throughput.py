"""StepCollector throughput against a hand-written collect loop, in the same run.

Both act with the same 2x64 MLP DQN policy (epsilon-greedy, eps=0.1, its acting copy) on
CartPole-v1 and store the same transitions (obs, action, reward, next_obs, terminated,
truncated) in a ReplayBuffer. rlpipe runs `eps_greedy_handler → StepCollector → data_pusher`
through a Task; the hand-written loop calls the policy, steps a gymnasium vector env with
SAME_STEP autoreset (so, like rlpipe, no pseudo-transition reaches the buffer) and pushes the
rows itself. Rounds alternate; the best of each is kept. Figures are env steps per second.

Run:  python benchmarks/collect_throughput.py [--quick]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

import gymnasium as gym
import numpy as np
import torch
from easydict import EasyDict

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from rlpipe.contexts import OnlineRLContext  # noqa: E402
from rlpipe.data import ReplayBuffer  # noqa: E402
from rlpipe.engine import Task  # noqa: E402
from rlpipe.envs import EnvManager  # noqa: E402
from rlpipe.middleware import StepCollector, data_pusher, eps_greedy_handler  # noqa: E402
from rlpipe.policies import DQNPolicy  # noqa: E402

ENV_ID = "CartPole-v1"


def make_policy(obs_space, action_space) -> DQNPolicy:
    return DQNPolicy({"model": {"hidden": (64, 64)}, "seed": 0}, obs_space, action_space)


def cfg(n_sample: int) -> EasyDict:
    return EasyDict(policy=dict(collect=dict(n_sample=n_sample, random_collect_size=0),
                                other=dict(eps=dict(type="linear", start=0.1, end=0.1, decay=1))))


def rlpipe_round(mode: str, n_envs: int, steps: int) -> float:
    env = EnvManager(ENV_ID, n_envs=n_envs, seed=0, mode=mode)
    policy = make_policy(env.observation_space, env.action_space)
    buffer_ = ReplayBuffer(steps + 10 * n_envs)
    task = Task()
    n_sample = 32 * n_envs
    with task.start(ctx=OnlineRLContext()):
        task.use(eps_greedy_handler(cfg(n_sample)))
        task.use(StepCollector(cfg(n_sample), policy.collect_mode, env))
        task.use(data_pusher(cfg(n_sample), buffer_))
        start = time.perf_counter()
        task.run(max_step=max(1, steps // n_sample))
        elapsed = time.perf_counter() - start
        collected = task.ctx.env_step
    return collected / elapsed


def hand_round(mode: str, n_envs: int, steps: int) -> float:
    fns = [lambda: gym.make(ENV_ID) for _ in range(n_envs)]
    if mode == "native":
        venv = gym.make_vec(ENV_ID, num_envs=n_envs, vectorization_mode="vector_entry_point")
    else:
        venv = gym.vector.SyncVectorEnv(fns, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    policy = make_policy(venv.single_observation_space, venv.single_action_space)
    buffer_ = ReplayBuffer(steps + 10 * n_envs)
    obs, _ = venv.reset(seed=0)
    collected, start = 0, time.perf_counter()
    skip = np.zeros(n_envs, dtype=bool)  # native NEXT_STEP: the row after an end is a reset
    while collected < steps:
        action = policy.collect_mode.forward(obs, eps=0.1)["action"]
        next_obs, reward, terminated, truncated, info = venv.step(action)
        real_next = next_obs
        if mode != "native" and "_final_obs" in info:
            real_next = next_obs.copy()
            for i in np.flatnonzero(info["_final_obs"]):
                real_next[i] = info["final_obs"][i]
        keep = ~skip
        rows = {"obs": obs[keep], "action": action[keep], "reward": reward[keep].astype(np.float32),
                "next_obs": real_next[keep], "terminated": terminated[keep],
                "truncated": truncated[keep]}
        buffer_.push(rows)
        collected += int(keep.sum())
        skip = (terminated | truncated) if mode == "native" else skip
        obs = next_obs
    elapsed = time.perf_counter() - start
    venv.close()
    return collected / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    configs = [("sync", 8, 16_000), ("native", 64, 64_000)]
    if args.quick:
        configs = [(m, n, s // 4) for m, n, s in configs]
    print(f"{'mode':8s}{'envs':>6s}{'hand-written':>16s}{'rlpipe':>12s}{'ratio':>8s}")
    for mode, n_envs, steps in configs:
        hand, ours = [], []
        for _ in range(args.rounds):
            hand.append(hand_round(mode, n_envs, steps))
            ours.append(rlpipe_round(mode, n_envs, steps))
        h, o = max(hand), max(ours)
        print(f"{mode:8s}{n_envs:6d}{h:16,.0f}{o:12,.0f}{o / h:8.2f}")


if __name__ == "__main__":
    main()
