"""cartpole-dqn: env steps and wall time to solve, rlpipe against a plain hand-written DQN loop.

The plain loop (below, no framework) uses the same network ([256, 256] MLP), hyperparameters
(rlpipe/zoo/cartpole/dqn.py), gymnasium vector env (CartPole's native vector env, 8 copies),
evaluation schedule (10 greedy episodes every 512 updates) and stop value (475). Each seed runs
rlpipe sync, rlpipe --async and the plain loop back to back. Reported: env steps when the
stop value was reached (or the budget), wall time, and wall time per env step relative to the
plain loop.

Run:  python benchmarks/dqn_cartpole.py [--seeds 0 1 2 3 4] [--budget 50000] [--no-async]
"""
from __future__ import annotations

import argparse
import copy
import pathlib
import sys
import tempfile
import time

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from rlpipe.zoo import get_entry  # noqa: E402
from rlpipe.training import train  # noqa: E402

CFG = get_entry("cartpole-dqn").resolve()


def plain_dqn(seed: int, budget: int) -> dict:
    """A hand-written DQN loop with the zoo entry's hyperparameters."""
    p, learn = CFG.policy, CFG.policy.learn
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    env = gym.make_vec("CartPole-v1", num_envs=CFG.env.n_envs, vectorization_mode="vector_entry_point")
    eval_env = gym.make_vec("CartPole-v1", num_envs=CFG.env.eval_n_envs,
                            vectorization_mode="vector_entry_point")
    hidden = tuple(p.model.hidden)
    q = nn.Sequential(nn.Linear(4, hidden[0]), nn.ReLU(), nn.Linear(hidden[0], hidden[1]), nn.ReLU(),
                      nn.Linear(hidden[1], 2))
    q_target = copy.deepcopy(q)
    opt = torch.optim.Adam(q.parameters(), lr=learn.lr)
    cap = CFG.replay.capacity
    buf = {"obs": np.zeros((cap, 4), np.float32), "next_obs": np.zeros((cap, 4), np.float32),
           "action": np.zeros(cap, np.int64), "reward": np.zeros(cap, np.float32),
           "terminated": np.zeros(cap, np.float32)}
    size = pos = 0
    eps_cfg = p.other.eps

    def evaluate() -> float:
        obs, _ = eval_env.reset(seed=seed + 10_000 + updates)
        returns, ep_ret, skip = [], np.zeros(eval_env.num_envs), np.zeros(eval_env.num_envs, bool)
        while len(returns) < p.eval.evaluator.n_episode:
            with torch.no_grad():
                a = q(torch.as_tensor(obs)).argmax(1).numpy()
            obs, r, term, trunc, _ = eval_env.step(a)
            ep_ret += np.where(skip, 0, r)
            done = (term | trunc) & ~skip
            returns += ep_ret[done].tolist()
            ep_ret[done] = 0
            skip = done
        return float(np.mean(returns[: p.eval.evaluator.n_episode]))

    obs, _ = env.reset(seed=seed)
    skip = np.zeros(env.num_envs, bool)  # NEXT_STEP autoreset: the row after an end is not real
    env_step = updates = inserted = 0
    start, solved_at, best = time.perf_counter(), None, -np.inf
    next_eval = 0
    while env_step < budget:
        for _ in range(p.collect.n_sample // env.num_envs):
            eps = eps_cfg.end + (eps_cfg.start - eps_cfg.end) * max(0.0, 1 - env_step / eps_cfg.decay)
            if env_step < p.collect.random_collect_size:
                action = rng.integers(2, size=env.num_envs)
            else:
                with torch.no_grad():
                    action = q(torch.as_tensor(obs)).argmax(1).numpy()
                explore = rng.random(env.num_envs) < eps
                action[explore] = rng.integers(2, size=int(explore.sum()))
            next_obs, reward, term, trunc, _ = env.step(action)
            for i in np.flatnonzero(~skip):
                buf["obs"][pos], buf["next_obs"][pos], buf["action"][pos] = obs[i], next_obs[i], action[i]
                buf["reward"][pos], buf["terminated"][pos] = reward[i], term[i]
                pos, size = (pos + 1) % cap, min(size + 1, cap)
            real = int((~skip).sum())
            env_step += real
            inserted += real
            skip = term | trunc
            obs = next_obs
        if updates >= next_eval:
            value = evaluate()
            best = max(best, value)
            next_eval = updates + p.eval.evaluator.eval_freq
            if value >= CFG.env.stop_value:
                solved_at = env_step
                break
        if inserted < CFG.replay.min_samples:
            continue
        allowed = int(inserted * learn.update_per_collect / p.collect.n_sample) - updates
        for _ in range(min(learn.update_per_collect, allowed)):
            idx = rng.integers(size, size=learn.batch_size)
            o, no = torch.as_tensor(buf["obs"][idx]), torch.as_tensor(buf["next_obs"][idx])
            a, r = torch.as_tensor(buf["action"][idx]), torch.as_tensor(buf["reward"][idx])
            d = torch.as_tensor(buf["terminated"][idx])
            with torch.no_grad():
                next_a = q(no).argmax(1, keepdim=True)
                target = r + learn.gamma * (1 - d) * q_target(no).gather(1, next_a).squeeze(1)
            loss = F.smooth_l1_loss(q(o).gather(1, a[:, None]).squeeze(1), target)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(q.parameters(), learn.grad_clip)
            opt.step()
            updates += 1
            if updates % learn.target_update_freq == 0:
                q_target.load_state_dict(q.state_dict())
    env.close()
    eval_env.close()
    return {"env_step": env_step, "solved_at": solved_at, "best": best,
            "wall_time": time.perf_counter() - start}


def rlpipe_run(seed: int, budget: int, async_mode: bool) -> dict:
    with tempfile.TemporaryDirectory() as run_dir:
        r = train("cartpole-dqn", seed=seed, max_env_step=budget, run_dir=run_dir,
                  async_mode=async_mode, progress=False)
    solved = r["eval_value"] >= CFG.env.stop_value
    return {"env_step": r["env_step"], "solved_at": r["env_step"] if solved else None,
            "best": r["best_eval_value"], "wall_time": r["wall_time"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--budget", type=int, default=50_000)
    parser.add_argument("--no-async", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    kinds = ["plain", "rlpipe sync"] + ([] if args.no_async else ["rlpipe async"])
    rows = {k: [] for k in kinds}
    print(f"{'seed':>4s} {'run':14s}{'solved at':>10s}{'best eval':>10s}{'wall s':>8s}{'ms/step':>8s}")
    for seed in args.seeds:
        for kind in kinds:
            if kind == "plain":
                r = plain_dqn(seed, args.budget)
            else:
                r = rlpipe_run(seed, args.budget, async_mode=kind.endswith("async"))
            rows[kind].append(r)
            print(f"{seed:4d} {kind:14s}{str(r['solved_at'] or '-'):>10s}{r['best']:10.1f}"
                  f"{r['wall_time']:8.1f}{1000 * r['wall_time'] / r['env_step']:8.3f}", flush=True)
    print()
    plain_per_step = np.mean([r["wall_time"] / r["env_step"] for r in rows["plain"]])
    for kind in kinds:
        solved = sum(r["solved_at"] is not None for r in rows[kind])
        per_step = np.mean([r["wall_time"] / r["env_step"] for r in rows[kind]])
        print(f"{kind:14s} solved {solved}/{len(rows[kind])} (≥{CFG.env.stop_value} within "
              f"{args.budget} steps); wall time per env step {1000 * per_step:.3f} ms = "
              f"{per_step / plain_per_step:.2f}x plain")


if __name__ == "__main__":
    main()
