"""What carrying hidden state costs the acting path, in the same run.

Both rounds collect CartPole-v1 (sync, 8 envs) with the same 2x64 MLP DQN policy (eps=0.1) through
`StepCollector`. The recurrent round wraps that policy as a recurrent one whose state is an
LSTM-sized pair of [n, 64] arrays passed through unchanged (no recurrent network is run), so
the difference is the pipeline's own work: calling with state/first, zeroing rows where
episodes start, recording `first` and `state` per step. Rounds alternate; the best of each is
kept. Figures are env steps per second. (A real LSTM's forward cost comes on top; the
recurrent zoo entries report that.)

Run:  python benchmarks/recurrent_acting.py [--quick]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np
import torch
from easydict import EasyDict

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from rlpipe.contexts import OnlineRLContext  # noqa: E402
from rlpipe.engine import Task  # noqa: E402
from rlpipe.envs import EnvManager  # noqa: E402
from rlpipe.middleware import StepCollector, eps_greedy_handler  # noqa: E402
from rlpipe.policies import DQNPolicy  # noqa: E402

HIDDEN = 64


class PassThroughMemory:
    """A collect face with recurrent = True: DQN's action, an [n, 64] (h, c) state handed back."""

    recurrent = True

    def __init__(self, face) -> None:
        self.face = face

    def initial_state(self, n: int):
        return {"h": np.zeros((n, HIDDEN), np.float32), "c": np.zeros((n, HIDDEN), np.float32)}

    def forward(self, obs, state, first, **kwargs):
        out = dict(self.face.forward(obs, **kwargs))
        out["state"] = {"h": state["h"] + 0.0, "c": state["c"] + 0.0}  # fresh arrays, as an LSTM's
        return out

    def refresh(self) -> None:
        self.face.refresh()


def cfg(n_sample: int) -> EasyDict:
    return EasyDict(policy=dict(collect=dict(n_sample=n_sample, random_collect_size=0),
                                other=dict(eps=dict(type="linear", start=0.1, end=0.1, decay=1))))


def round_(recurrent: bool, n_envs: int, steps: int) -> float:
    env = EnvManager("CartPole-v1", n_envs=n_envs, seed=0, mode="sync")
    policy = DQNPolicy({"model": {"hidden": (64, 64)}, "seed": 0}, env.observation_space,
                       env.action_space)
    face = PassThroughMemory(policy.collect_mode) if recurrent else policy.collect_mode
    n_sample = 32 * n_envs
    task = Task()
    with task.start(ctx=OnlineRLContext()):
        task.use(eps_greedy_handler(cfg(n_sample)))
        task.use(StepCollector(cfg(n_sample), face, env))
        start = time.perf_counter()
        task.run(max_step=max(1, steps // n_sample))
        elapsed = time.perf_counter() - start
        collected = task.ctx.env_step
    env.close()
    return collected / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    n_envs, steps = 8, 4_000 if args.quick else 16_000
    plain, memory = [], []
    for _ in range(args.rounds):
        plain.append(round_(False, n_envs, steps))
        memory.append(round_(True, n_envs, steps))
    p, m = max(plain), max(memory)
    print(f"{'envs':>6s}{'feed-forward':>15s}{'with state':>13s}{'ratio':>8s}")
    print(f"{n_envs:6d}{p:15,.0f}{m:13,.0f}{m / p:8.2f}")


if __name__ == "__main__":
    main()
