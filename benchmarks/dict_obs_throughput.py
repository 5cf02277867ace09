"""Collection throughput with a Dict observation against the same data flattened.

One env (a 7×7×3 uint8 image, an 8-dim vector and a Discrete(4) part; cheap to step, so the
data path dominates) runs as is and wrapped in gymnasium's FlattenObservation (one float32
vector of 147 + 8 + 4). Both are collected by `eps_greedy_handler → StepCollector →
data_pusher` into a ReplayBuffer with a DQN policy (eps 0.1) whose network is the same MLP on
the same features: the Dict policy reads the image flat (`model.encoders.image="mlp"`), so the
difference is the data path (nested batches, per-key storage, uint8 images), not the model.
Rounds alternate; the best of each is kept. Figures are env steps per second; the ratio is
Dict / flat (target >= 0.9).

`--ppo` measures instead a whole PPO run on MiniGrid-DoorKey-5x5's Dict observation (image +
direction) beside Stable-Baselines3's PPO with MultiInputPolicy on the same env, at rl-zoo's
settings (8 envs × 128 steps, 10 epochs of minibatches of 64): this process's CPU time per env
step (collection, GAE and updates; one torch thread; after one warm-up rollout), rounds
alternating, the best of each kept. rlpipe runs the network of SB3's policy (the image read flat,
separate 64-64 tanh MLPs; the `minigrid-doorkey-ppo` entry) and the small conv trunk (`--net
conv`). The ratio is rlpipe / SB3 (target <= 0.6).

`--ppo-update` measures rlpipe's PPO update alone: one rollout collected with SB3's network
(`--net mlp`) is learned from again and again from the same weights, optimiser state and
shuffling seed; it prints the best CPU ms per minibatch over the repetitions and torch.profiler's
count of aten ops per minibatch (a figure that does not move with the machine's load).

`--ppo-collect` splits rlpipe's collection on DoorKey (SB3's network, 8 envs) into CPU µs per
vector step: MiniGrid's own steps (the same wrapped envs stepped one by one with the actions the
policy chose, reset where an episode ends: the floor), the env manager's step (MiniGrid and the
batching of its Dict), and the policy's collect forward, between env steps as in a rollout and
called alone; blocks of calls alternate, the minimum and median over blocks are printed.

Run:  python benchmarks/dict_obs_throughput.py [--quick]
      python benchmarks/dict_obs_throughput.py --ppo [--net mlp|conv|both] [--rollouts 8]
      python benchmarks/dict_obs_throughput.py --ppo-update [--net mlp|conv] [--rounds 7]
      python benchmarks/dict_obs_throughput.py --ppo-collect [--net mlp|conv] [--rounds 30]
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


class GridEnv(gym.Env):
    """Dict observation: image (7, 7, 3) uint8, vec (8,) float32, direction Discrete(4)."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Dict({
            "image": gym.spaces.Box(0, 255, (7, 7, 3), np.uint8),
            "vec": gym.spaces.Box(-1, 1, (8,), np.float32),
            "direction": gym.spaces.Discrete(4)})
        self.action_space = gym.spaces.Discrete(3)
        self._t = 0
        self._image = np.zeros((7, 7, 3), np.uint8)
        self._vec = np.zeros(8, np.float32)

    def _obs(self):
        self._image[self._t % 7, :, 0] = self._t % 256
        self._vec[0] = (self._t % 10) / 10
        return {"image": self._image.copy(), "vec": self._vec.copy(), "direction": self._t % 4}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return self._obs(), {}

    def step(self, action):
        self._t += 1
        return self._obs(), float(action == self._t % 3), False, self._t >= 100, {}


def make_dict() -> gym.Env:
    return GridEnv()


def make_flat() -> gym.Env:
    return gym.wrappers.FlattenObservation(GridEnv())


def cfg(n_sample: int) -> EasyDict:
    return EasyDict(policy=dict(collect=dict(n_sample=n_sample, random_collect_size=0),
                                other=dict(eps=dict(type="linear", start=0.1, end=0.1, decay=1))))


def one_round(factory, encoders: dict, n_envs: int, steps: int) -> float:
    env = EnvManager(factory, n_envs=n_envs, seed=0, mode="sync")
    policy = DQNPolicy({"model": {"hidden": (64, 64), "encoders": encoders}, "seed": 0},
                       env.observation_space, env.action_space)
    buffer_ = ReplayBuffer(steps + 10 * n_envs)
    n_sample = 32 * n_envs
    task = Task()
    with task.start(ctx=OnlineRLContext()):
        task.use(eps_greedy_handler(cfg(n_sample)))
        task.use(StepCollector(cfg(n_sample), policy.collect_mode, env))
        task.use(data_pusher(cfg(n_sample), buffer_))
        start = time.perf_counter()
        task.run(max_step=max(1, steps // n_sample))
        elapsed = time.perf_counter() - start
        collected = task.ctx.env_step
    env.close()
    return collected / elapsed


DOORKEY = "MiniGrid-DoorKey-5x5-v0"
NETS = {"mlp": dict(hidden=(64, 64), activation="tanh", share_encoder=False,
                    encoders={"image": "mlp"}),
        "conv": dict(hidden=(64,), activation="tanh", share_encoder=True)}


def _rl_zoo_ppo(net: str) -> tuple:
    """rlpipe's PPO at rl-zoo's DoorKey settings with network `net`: (cfg, envs, policy)."""
    from rlpipe.pipelines.onpolicy import resolve_config
    from rlpipe.policies import PPOPolicy

    cfg = resolve_config(PPOPolicy, dict(
        env=dict(id=DOORKEY, n_envs=8),
        policy=dict(seed=0, model=NETS[net], collect=dict(n_sample=1024),
                    learn=dict(lr=2.5e-4, epoch_per_collect=10, batch_size=64))))
    env = EnvManager(DOORKEY, n_envs=8, seed=0, mode="sync")
    return cfg, env, PPOPolicy(cfg.policy, env.observation_space, env.action_space)


def rlpipe_ppo_cpu(net: str, rollouts: int) -> float:
    """CPU seconds per env step of rlpipe's PPO (collect → GAE → epochs of updates)."""
    from rlpipe.middleware import gae_estimator, multistep_trainer

    cfg, env, policy = _rl_zoo_ppo(net)
    task = Task()
    with task.start(ctx=OnlineRLContext()):
        task.use(StepCollector(cfg, policy.collect_mode, env))
        task.use(gae_estimator(cfg, policy.collect_mode))
        task.use(multistep_trainer(cfg, policy.learn_mode))
        task.run(max_step=1)  # warm-up rollout
        steps, start = task.ctx.env_step, time.process_time()
        task.run(max_step=1 + rollouts)
        cpu, steps = time.process_time() - start, task.ctx.env_step - steps
    env.close()
    return cpu / steps


def rlpipe_update_cpu(net: str, repeats: int) -> "tuple[float, float]":
    """(best CPU seconds per minibatch, aten ops per minibatch) of PPO's update on one rollout."""
    import copy

    from torch.profiler import profile

    from rlpipe.middleware import gae_estimator

    cfg, env, policy = _rl_zoo_ppo(net)
    batches = []
    task = Task()
    with task.start(ctx=OnlineRLContext()):
        task.use(StepCollector(cfg, policy.collect_mode, env))
        task.use(gae_estimator(cfg, policy.collect_mode))
        task.use(lambda ctx: batches.append(ctx.train_data))
        task.run(max_step=1)
    env.close()
    policy.learn_mode.forward(batches[0])  # the optimiser's state exists from here on
    state = copy.deepcopy(policy.state_dict())

    def learn() -> "tuple[float, int]":
        # a copy each time: the optimiser keeps the loaded tensors and steps them in place
        policy.load_state_dict(copy.deepcopy(state))
        start = time.process_time()
        n_updates = policy.learn_mode.forward(batches[0])["n_updates"]
        return time.process_time() - start, n_updates

    best = min(cpu / n for cpu, n in (learn() for _ in range(repeats)))
    with profile() as prof:
        _, n_updates = learn()
    ops = sum(e.count for e in prof.key_averages() if e.key.startswith("aten::"))
    return best, ops / n_updates


def rlpipe_collect_cpu(net: str, blocks: int, calls: int = 100) -> "dict[str, list[float]]":
    """CPU µs per vector step of each part of collection, one figure per block of `calls`."""
    from rlpipe.envs._minigrid import make_minigrid

    cfg, env, policy = _rl_zoo_ppo(net)
    face = policy.collect_mode
    obs = env.reset()
    envs = [make_minigrid(DOORKEY) for _ in range(env.n_envs)]
    for i, single in enumerate(envs):
        single.reset(seed=100 + i)
    clock = time.process_time
    parts: dict = {"minigrid": [], "manager": [], "forward": [], "forward alone": []}
    for _ in range(blocks):
        forward = manager = 0.0
        actions = []
        for _ in range(calls):
            start = clock()
            out = face.forward(obs)
            middle = clock()
            obs = env.step(out["action"]).obs
            forward, manager = forward + middle - start, manager + clock() - middle
            actions.append(out["action"].tolist())
        start = clock()
        for row in actions:  # the floor: the same kind of work, no batching
            for single, action in zip(envs, row):
                _, _, terminated, truncated, _ = single.step(action)
                if terminated or truncated:
                    single.reset()
        minigrid = clock() - start
        start = clock()
        for _ in range(calls):
            face.forward(obs)
        alone = clock() - start
        for key, total in zip(parts, (minigrid, manager, forward, alone)):
            parts[key].append(1e6 * total / calls)
    env.close()
    return parts


def sb3_ppo_cpu(rollouts: int) -> float:
    """CPU seconds per env step of SB3's PPO with MultiInputPolicy on the same env."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    from rlpipe.envs._minigrid import make_minigrid

    env = make_vec_env(lambda: make_minigrid(DOORKEY), n_envs=8, seed=0)
    model = PPO("MultiInputPolicy", env, n_steps=128, batch_size=64, n_epochs=10,
                learning_rate=2.5e-4, ent_coef=0.0, seed=0, device="cpu")
    model.learn(1024)  # warm-up rollout
    start = time.process_time()
    model.learn(1024 * rollouts, reset_num_timesteps=False)
    cpu = time.process_time() - start
    env.close()
    return cpu / (1024 * rollouts)


def ppo_main(nets: list, rollouts: int, rounds: int) -> None:
    results: dict = {name: [] for name in ["sb3", *nets]}
    for _ in range(rounds):
        results["sb3"].append(sb3_ppo_cpu(rollouts))
        for net in nets:
            results[net].append(rlpipe_ppo_cpu(net, rollouts))
    sb3 = min(results["sb3"])
    print(f"{'PPO on DoorKey-5x5 (Dict obs)':32s}{'CPU ms / env step':>20s}{'/ SB3':>8s}")
    print(f"{'SB3 MultiInputPolicy':32s}{1e3 * sb3:20.3f}{1.0:8.2f}")
    for net in nets:
        best = min(results[net])
        print(f"{'rlpipe, net ' + net:32s}{1e3 * best:20.3f}{best / sb3:8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ppo", action="store_true", help="PPO on DoorKey beside SB3's")
    parser.add_argument("--ppo-update", action="store_true",
                        help="rlpipe's PPO update alone: CPU ms and aten ops per minibatch")
    parser.add_argument("--ppo-collect", action="store_true",
                        help="rlpipe's collection split: MiniGrid, env manager, collect forward")
    parser.add_argument("--net", choices=("mlp", "conv", "both"), default="both")
    parser.add_argument("--rollouts", type=int, default=8, help="--ppo: measured rollouts")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.ppo_update:
        for net in ["mlp", "conv"] if args.net == "both" else [args.net]:
            cpu, ops = rlpipe_update_cpu(net, args.rounds + 4)
            print(f"PPO update, net {net}: {1e3 * cpu:.3f} CPU ms / minibatch (best of "
                  f"{args.rounds + 4}), {ops:.0f} aten ops / minibatch")
        return
    if args.ppo_collect:
        for net in ["mlp", "conv"] if args.net == "both" else [args.net]:
            parts = rlpipe_collect_cpu(net, args.rounds)
            print(f"collection, net {net}: CPU us per vector step of 8 envs over {args.rounds} "
                  f"blocks (min / median)")
            for key, values in parts.items():
                values.sort()
                print(f"  {key:14s}{values[0]:9.0f}{values[len(values) // 2]:9.0f}")
            over = sorted(m - f for m, f in zip(parts["manager"], parts["minigrid"]))
            print(f"  {'manager - minigrid':14s} median {over[len(over) // 2]:.0f}")
        return
    if args.ppo:
        ppo_main(["mlp", "conv"] if args.net == "both" else [args.net],
                 2 if args.quick else args.rollouts, args.rounds)
        return
    n_envs, steps = 8, (4_000 if args.quick else 16_000)
    flat, nested = [], []
    for _ in range(args.rounds):
        flat.append(one_round(make_flat, {}, n_envs, steps))
        nested.append(one_round(make_dict, {"image": "mlp"}, n_envs, steps))
    f, d = max(flat), max(nested)
    print(f"{'envs':>6s}{'flat':>12s}{'dict':>12s}{'ratio':>8s}")
    print(f"{n_envs:6d}{f:12,.0f}{d:12,.0f}{d / f:8.2f}")


if __name__ == "__main__":
    main()
