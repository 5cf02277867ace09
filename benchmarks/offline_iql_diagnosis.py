"""Why pendulum-iql misses its bar on pendulum/medium-replay-v0: how far its critics converge,
how right its advantages are, and how well any advantage-weighted regression on the data's own
actions could do (an oracle ceiling).

    nice .venv/bin/python benchmarks/offline_iql_diagnosis.py --workdir benchmarks/results/offline
    nice .venv/bin/python benchmarks/offline_iql_diagnosis.py --steps 40000 --every 8000

Uses the data set `benchmarks/offline.py` made in --workdir (run that first). Everything trains
in a plain loop on one thread (no pipeline), with the zoo entries' policy settings, and is
evaluated on the same 10 Pendulum-v1 episodes (reset seeds 1000-1009). Prints JSON lines and
writes them to iql_diagnosis.json in --workdir:

1. `data`: episodes, returns, terminated / truncated rows, near-upright rows (cos θ > 0.9).
2. `reference`: pendulum-td3bc's policy trained on the data (it passes the bar). Its values
   V_ref(s) come from batched rollouts of Pendulum's exact dynamics (500 steps; γ^500 < 0.01),
   giving oracle advantages A*(s, a) = r + γ V_ref(s') − V_ref(s) of the data's transitions;
   `gap`: how far the data's actions are from the reference's.
3. `iql` (every --every updates): value / critic losses, V against the data's Monte-Carlo
   returns (first 50 steps of each episode) and against V_ref, the advantage spread, the AWR
   weights (clipped at the max, near 1, below 0.1), the correlation of IQL's advantages with
   A*, and the evaluation.
4. `extract`: the same 64-64 Gaussian actor (Adam 1e-3, cosine, batch 128, 8 000 steps)
   fitted by BC on the data's actions, BC on the best two full episodes, AWR on the data's
   actions with the oracle advantages A* (β 1, 3, 10: what IQL would reach with perfect
   advantages), and BC on the reference's actions at the data's states (the data's states with
   the right actions).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

import gymnasium as gym
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from rlpipe.config import merge_config  # noqa: E402
from rlpipe.data import load_dataset  # noqa: E402
from rlpipe.models import GaussianActor  # noqa: E402
from rlpipe.policies import IQLPolicy, TD3BCPolicy  # noqa: E402
from rlpipe.zoo.pendulum import iql as iql_entry  # noqa: E402
from rlpipe.zoo.pendulum import td3bc as td3bc_entry  # noqa: E402

DATASET, GAMMA, EVAL_SEEDS = "pendulum/medium-replay-v0", 0.99, range(1000, 1010)
Act = Callable[[np.ndarray], np.ndarray]  # observations [B, 3] -> env actions [B, 1]


def evaluate(env: gym.Env, act: Act) -> float:
    """Mean return of `act` over the fixed evaluation episodes."""
    returns = []
    for seed in EVAL_SEEDS:
        obs, _ = env.reset(seed=seed)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(act(obs[None])[0])
            total, done = total + reward, terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


def rollout_values(act: Act, obs: np.ndarray, horizon: int = 500) -> np.ndarray:
    """Discounted returns of `act` from each observation, by Pendulum-v1's dynamics (g = 10,
    m = l = 1, dt = 0.05, |θ̇| <= 8, |u| <= 2), all states at once."""
    theta = np.arctan2(obs[:, 1], obs[:, 0]).astype(np.float64)
    speed = obs[:, 2].astype(np.float64)
    value, discount = np.zeros(len(obs)), 1.0
    for _ in range(horizon):
        now = np.stack([np.cos(theta), np.sin(theta), speed], 1).astype(np.float32)
        u = np.clip(act(now)[:, 0], -2.0, 2.0)
        angle = (theta + np.pi) % (2 * np.pi) - np.pi
        value += discount * -(angle ** 2 + 0.1 * speed ** 2 + 0.001 * u ** 2)
        discount *= GAMMA
        speed = np.clip(speed + (15.0 * np.sin(theta) + 3.0 * u) * 0.05, -8.0, 8.0)
        theta = theta + speed * 0.05
    return value


def monte_carlo(rows: Dict[str, np.ndarray]) -> tuple:
    """Discounted returns-to-go within each episode (the tail after a cut is missing) and each
    row's step in its episode."""
    ends = np.nonzero(rows["terminated"] | rows["truncated"])[0]
    n = len(rows["reward"])
    returns, steps, start = np.zeros(n), np.zeros(n, int), 0
    for end in ends:
        acc = 0.0
        for i in range(end, start - 1, -1):
            acc = rows["reward"][i] + GAMMA * acc
            returns[i] = acc
        steps[start:end + 1] = np.arange(end + 1 - start)
        start = end + 1
    return returns, steps


def policy_cfg(policy_cls: Any, entry: Any) -> Any:
    return merge_config(merge_config(policy_cls.config_schema(), entry.config["policy"]),
                        {"seed": 0})


def fit_actor(env: gym.Env, obs: torch.Tensor, action: torch.Tensor, weight: torch.Tensor,
              steps: int = 8000) -> float:
    """Weighted Gaussian regression (IQL's extraction) of a fresh 64-64 actor onto `action`
    ([-1, 1] units) at `obs`; the evaluation of its mean."""
    torch.manual_seed(0)
    actor = GaussianActor(env.observation_space, 1, (64, 64))
    optimizer = torch.optim.Adam(actor.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    for it in range(steps):
        i = torch.as_tensor(rng.integers(0, len(obs), 128))
        for group in optimizer.param_groups:
            group["lr"] = 1e-3 * 0.5 * (1.0 + np.cos(np.pi * it / steps))
        loss = -(weight[i] * actor.log_prob(obs[i], action[i])).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        return evaluate(env, lambda o: actor.deterministic(torch.as_tensor(o)).numpy() * 2.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="benchmarks/results/offline")
    parser.add_argument("--steps", type=int, default=8000, help="IQL updates (the entry's)")
    parser.add_argument("--every", type=int, default=2000)
    parser.add_argument("--no-extract", action="store_true", help="skip part 4")
    args = parser.parse_args()
    torch.set_num_threads(1)
    os.environ["MINARI_DATASETS_PATH"] = str(Path(args.workdir).absolute() / "minari")
    start, lines = time.perf_counter(), []

    def report(kind: str, **row: Any) -> None:
        row = {"kind": kind, **row, "wall_s": round(time.perf_counter() - start)}
        lines.append(row)
        print(json.dumps(row), flush=True)

    env = gym.make("Pendulum-v1")
    data = load_dataset(DATASET, seed=0)
    rows = data.rows(np.arange(len(data)))
    obs = torch.as_tensor(rows["obs"])
    upright = rows["obs"][:, 0] > 0.9
    report("data", episodes=data.n_episodes, lengths=data.episode_lengths.tolist(),
           returns=np.round(data.episode_returns).tolist(),
           terminated=int(rows["terminated"].sum()), truncated=int(rows["truncated"].sum()),
           upright=int(upright.sum()))

    # 2. the reference policy and the oracle advantages of the data's transitions
    cfg = policy_cfg(TD3BCPolicy, td3bc_entry)
    ref = TD3BCPolicy(cfg, env.observation_space, env.action_space)
    ref.set_obs_normalizer(*data.obs_stats())
    for _ in range(td3bc_entry.config["max_train_iter"]):
        ref.learn_mode.forward(data.sample(cfg.learn.batch_size))
    ref_act: Act = lambda o: ref.eval_mode.forward(o)["action"]  # noqa: E731
    v_ref = rollout_values(ref_act, rows["obs"])
    a_star = rows["reward"] + GAMMA * rollout_values(ref_act, rows["next_obs"]) - v_ref
    ref_action = ref_act(rows["obs"])[:, 0]
    gap = np.abs(rows["action"][:, 0] - ref_action)
    report("reference", eval=evaluate(env, ref_act), v_ref_mean=float(v_ref.mean()),
           a_star_pct_5_25_50_75_95=np.round(np.percentile(a_star, [5, 25, 50, 75, 95]),
                                             2).tolist(),
           gap_median=float(np.median(gap)), within_0_2=float((gap < 0.2).mean()),
           upright_gap_median=float(np.median(gap[upright])),
           upright_within_0_2=int((gap[upright] < 0.2).sum()))

    # 3. IQL as the entry trains it
    cfg = policy_cfg(IQLPolicy, iql_entry)
    cfg.learn.actor_lr_cosine_steps = args.steps
    iql = IQLPolicy(cfg, env.observation_space, env.action_space)
    iql.set_return_range(float(data.episode_returns.min()), float(data.episode_returns.max()))
    unit = iql.box.to_unit(torch.as_tensor(rows["action"]))
    mc, step_in_episode = monte_carlo(rows)
    early = step_in_episode < 50  # the missing tail weighs at most 0.99**150 = 0.22 there
    losses: List[List[float]] = []
    for it in range(1, args.steps + 1):
        out = iql.learn_mode.forward(data.sample(cfg.learn.batch_size))
        losses.append([out["value_loss"], out["critic_loss"]])
        if it % args.every:
            continue
        with torch.no_grad():
            v = iql.value(obs).numpy() / iql.reward_scale  # in the data's reward units
            q = torch.min(*iql.critic_target(obs, unit)).numpy() / iql.reward_scale
        adv = (q - v) * iql.reward_scale  # what the weights see
        weight = np.exp(np.minimum(cfg.learn.beta * adv, np.log(cfg.learn.max_weight)))
        report("iql", updates=it, reward_scale=iql.reward_scale,
               value_loss=float(np.mean([x[0] for x in losses[-args.every:]])),
               critic_loss=float(np.mean([x[1] for x in losses[-args.every:]])),
               v_mean=float(v.mean()), v_minus_mc_early=float((v - mc)[early].mean()),
               corr_v_v_ref=float(np.corrcoef(v, v_ref)[0, 1]),
               adv_std=float(adv.std()),
               weight_clipped=float((cfg.learn.beta * adv >= np.log(cfg.learn.max_weight))
                                    .mean()),
               weight_near_1=float(((weight > 0.5) & (weight < 2.0)).mean()),
               weight_below_0_1=float((weight < 0.1).mean()),
               corr_adv_a_star=float(np.corrcoef(adv, a_star)[0, 1]),
               eval=evaluate(env, lambda o: iql.eval_mode.forward(o)["action"]))

    # 4. extraction ceilings on the data's states
    if args.no_extract:
        Path(args.workdir, "iql_diagnosis.json").write_text(json.dumps(lines, indent=1))
        return
    ones = torch.ones(len(data))
    report("extract", fit="BC, data actions", eval=fit_actor(env, obs, unit, ones))
    full = np.nonzero(data.episode_lengths == data.episode_lengths.max())[0]
    best = full[np.argsort(-data.episode_returns[full])[:2]]
    episode = np.repeat(np.arange(data.n_episodes), data.episode_lengths)
    report("extract", fit=f"BC, best 2 full episodes {data.episode_returns[best].round()}",
           eval=fit_actor(env, obs, unit, torch.as_tensor(np.isin(episode, best),
                                                          dtype=torch.float32)))
    for beta in (1.0, 3.0, 10.0):
        weight = torch.as_tensor(np.exp(np.minimum(beta * a_star, np.log(100.0))),
                                 dtype=torch.float32)
        report("extract", fit=f"AWR, data actions, oracle advantages, beta {beta:g}",
               weight_clipped=float((weight >= 100.0 - 1e-3).float().mean()),
               eval=fit_actor(env, obs, unit, weight))
    report("extract", fit="BC, reference actions at the data's states",
           eval=fit_actor(env, obs, torch.as_tensor(ref_action[:, None] / 2.0), ones))
    Path(args.workdir, "iql_diagnosis.json").write_text(json.dumps(lines, indent=1))


if __name__ == "__main__":
    main()
