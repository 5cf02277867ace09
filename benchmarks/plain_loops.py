"""pendulum-sac and cartpole-ppo: wall time per env step, rlpipe against plain hand-written loops.

For each entry, a plain loop in this file (torch + gymnasium only, no rlpipe) does the same work
as the zoo entry's pipeline, with the hyperparameters read from the entry's resolved config:

- pendulum-sac: 1 Pendulum env (gymnasium SyncVectorEnv, SAME_STEP autoreset), 1000 uniformly
  random warm-up steps, then 32 env steps per iteration followed by up to 32 updates, never more
  updates than transitions inserted, none before 1000 transitions (the zoo's sample-ratio
  controller); twin critics, squashed Gaussian actor, automatic entropy temperature, Polyak
  target critics; 5 deterministic eval episodes on 5 envs every 500 updates (at the start of an
  iteration, as the evaluator middleware does).
- cartpole-ppo: CartPole's native vector env (8 copies, NEXT_STEP autoreset: the pseudo-step
  after an episode end is masked out and not counted), rollouts of 32 steps, GAE with truncation
  bootstrapping, the clipped objective over 20 epochs of 256-row minibatches, Adam lr 1e-3
  decaying linearly to 0 over the run's budget (in rows learned), grad norm 0.5; 10 greedy eval
  episodes on 10 envs every 100 updates.

Where rlpipe's policy picks a faster kernel (fused Adam and a foreach Polyak update for SAC,
Categorical without argument validation for PPO, critics frozen during SAC's actor step) the plain
loop uses the same, so the ratio measures the framework, not kernel choices. The plain loop
writes no logs and no checkpoints; `rlpipe.zoo.train` runs with a run folder (metrics,
TensorBoard, checkpoints), as a user would run it. Both run the whole env-step budget (the stop
value is disabled) and the wall time covers env and network construction in both. Seeds
alternate which of the two runs first. `--profile` prints rlpipe's per-middleware profile.

Evaluation time grows with the evaluated episodes' length (CartPole: as long as the policy keeps
the pole up), so it differs between two runs whose policies differ; the `-eval` column and the
"without evaluation" ratio leave it out (rlpipe's is the evaluator middleware's time).

Run:  python benchmarks/plain_loops.py [--seeds 0 1 2] [--sac-budget 20000] [--ppo-budget 50000]
      python benchmarks/plain_loops.py --quick         (one seed, 3k / 10k env steps)
"""
from __future__ import annotations

import argparse
import copy
import math
import pathlib
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from gymnasium.vector import AutoresetMode
from torch import nn
from torch.distributions import Categorical

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from rlpipe.zoo import get_entry  # noqa: E402
from rlpipe.training import train  # noqa: E402

NO_STOP = ["env.stop_value=1e9"]  # run the whole budget: no early stop at the stop value


def entry_config(name: str, budget: int) -> Any:
    """The entry's resolved config for this budget (PPO's lr decays over max_env_step)."""
    return get_entry(name).resolve({"max_env_step": budget}, NO_STOP)


def mlp(sizes: List[int], act: type, activate_last: bool = False) -> nn.Sequential:
    layers: List[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2 or activate_last:
            layers.append(act())
    return nn.Sequential(*layers)


# ------------------------------------------------------------------------------------------------
# plain SAC
# ------------------------------------------------------------------------------------------------
class SquashedActor(nn.Module):
    def __init__(self, obs_dim: int, act_dim: int, hidden: List[int], lo: float, hi: float):
        super().__init__()
        self.trunk = mlp([obs_dim, *hidden], nn.ReLU, activate_last=True)
        self.mean = nn.Linear(hidden[-1], act_dim)
        self.log_std = nn.Linear(hidden[-1], act_dim)
        self.lo, self.hi = lo, hi

    def forward(self, obs: torch.Tensor):
        h = self.trunk(obs)
        log_std = self.lo + 0.5 * (self.hi - self.lo) * (torch.tanh(self.log_std(h)) + 1.0)
        return self.mean(h), log_std

    def sample(self, obs: torch.Tensor):
        mean, log_std = self(obs)
        noise = torch.randn_like(mean)
        u = mean + log_std.exp() * noise
        logp = (-0.5 * noise.pow(2) - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        logp = logp - (2.0 * (math.log(2.0) - u - F.softplus(-2.0 * u))).sum(-1)  # tanh correction
        return torch.tanh(u), logp


def plain_sac(cfg: Any, seed: int, budget: int) -> Dict[str, Any]:
    p, learn = cfg.policy, cfg.policy.learn
    start, cpu_start = time.perf_counter(), time.process_time()
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    env = gym.make_vec(cfg.env.id, num_envs=cfg.env.n_envs, vectorization_mode="sync",
                       vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})
    eval_env = gym.make_vec(cfg.env.id, num_envs=cfg.env.eval_n_envs, vectorization_mode="sync",
                            vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})
    space = env.single_action_space
    obs_dim, act_dim = env.single_observation_space.shape[0], space.shape[0]
    bias, scale = (space.high + space.low) / 2, (space.high - space.low) / 2
    actor = SquashedActor(obs_dim, act_dim, list(p.model.actor_hidden), p.model.log_std_min,
                          p.model.log_std_max)
    qs = nn.ModuleList(mlp([obs_dim + act_dim, *p.model.critic_hidden, 1], nn.ReLU)
                       for _ in range(2))
    qs_target = copy.deepcopy(qs).requires_grad_(False)
    q_params, qt_params = list(qs.parameters()), list(qs_target.parameters())
    log_alpha = torch.tensor(math.log(learn.init_alpha), requires_grad=True)
    target_entropy = -float(act_dim)
    q_opt = torch.optim.Adam(q_params, lr=learn.critic_lr, fused=True)
    a_opt = torch.optim.Adam(actor.parameters(), lr=learn.actor_lr, fused=True)
    alpha_opt = torch.optim.Adam([log_alpha], lr=learn.alpha_lr, fused=True)

    cap = cfg.replay.capacity
    buf = {"obs": np.zeros((cap, obs_dim), np.float32),
           "next_obs": np.zeros((cap, obs_dim), np.float32),
           "action": np.zeros((cap, act_dim), np.float32),  # in [-1, 1] (the actor's box)
           "reward": np.zeros(cap, np.float32), "terminated": np.zeros(cap, np.float32)}
    size = pos = 0

    def q_min(net: nn.ModuleList, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        x = torch.cat([obs, act], 1)
        return torch.min(net[0](x), net[1](x)).squeeze(1)

    def update() -> None:
        idx = rng.integers(0, size, size=learn.batch_size)
        o, a = torch.as_tensor(buf["obs"][idx]), torch.as_tensor(buf["action"][idx])
        no, r = torch.as_tensor(buf["next_obs"][idx]), torch.as_tensor(buf["reward"][idx])
        d = torch.as_tensor(buf["terminated"][idx])
        with torch.no_grad():
            na, nlogp = actor.sample(no)
            y = r + learn.gamma * (1 - d) * (q_min(qs_target, no, na) - log_alpha.exp() * nlogp)
        x = torch.cat([o, a], 1)
        q_loss = F.mse_loss(qs[0](x).squeeze(1), y) + F.mse_loss(qs[1](x).squeeze(1), y)
        q_opt.zero_grad(set_to_none=True)
        q_loss.backward()
        q_opt.step()
        pa, logp = actor.sample(o)
        alpha = log_alpha.detach().exp()
        qs.requires_grad_(False)
        actor_loss = (alpha * logp - q_min(qs, o, pa)).mean()
        qs.requires_grad_(True)
        a_opt.zero_grad(set_to_none=True)
        actor_loss.backward()
        alpha_loss = -(log_alpha * (logp.detach() + target_entropy)).mean()
        alpha_opt.zero_grad(set_to_none=True)
        alpha_loss.backward()
        a_opt.step()
        alpha_opt.step()
        with torch.no_grad():
            torch._foreach_lerp_(qt_params, q_params, learn.tau)

    def evaluate() -> float:
        return run_eval(eval_env, lambda o: bias + scale * torch.tanh(actor(o)[0]).numpy(),
                        p.eval.evaluator.n_episode, first_seed)

    first_seed = [seed + 10_000]
    obs, _ = env.reset(seed=seed)
    env_step = inserted = updates = 0
    last_eval, evals, eval_time = -1, [], 0.0
    while env_step < budget:
        if last_eval < 0 or updates - last_eval >= p.eval.evaluator.eval_freq:
            t0 = time.perf_counter()
            evals.append(evaluate())
            eval_time += time.perf_counter() - t0
            last_eval = updates
        for _ in range(p.collect.n_sample // env.num_envs):
            if env_step < p.collect.random_collect_size:
                unit = rng.uniform(-1, 1, size=(env.num_envs, act_dim)).astype(np.float32)
            else:
                with torch.inference_mode():
                    unit = actor.sample(torch.as_tensor(obs))[0].numpy()
            next_obs, reward, term, trunc, info = env.step(bias + scale * unit)
            real_next = next_obs.copy()
            done = term | trunc
            if done.any():  # SAME_STEP: next_obs is already the new episode's first obs
                real_next[done] = np.stack(info["final_obs"][done])
            for i in range(env.num_envs):
                buf["obs"][pos], buf["next_obs"][pos] = obs[i], real_next[i]
                buf["action"][pos], buf["reward"][pos] = unit[i], reward[i]
                buf["terminated"][pos] = term[i]
                pos, size = (pos + 1) % cap, min(size + 1, cap)
            env_step += env.num_envs
            inserted += env.num_envs
            obs = next_obs
        if inserted >= cfg.replay.min_samples and size >= learn.batch_size:
            allowed = inserted * learn.update_per_collect // p.collect.n_sample - updates
            for _ in range(max(0, min(learn.update_per_collect, allowed))):
                update()
                updates += 1
    env.close()
    eval_env.close()
    return {"env_step": env_step, "train_iter": updates, "final": evals[-1], "best": max(evals),
            "evals": len(evals), "eval_time": eval_time, "wall_time": time.perf_counter() - start,
            "cpu_time": time.process_time() - cpu_start}


def run_eval(env: gym.vector.VectorEnv, act: Callable[[torch.Tensor], np.ndarray],
             n_episode: int, first_seed: List[int]) -> float:
    """The first episode of each env (n_episode spread over the envs); NEXT_STEP or SAME_STEP."""
    n = env.num_envs
    quota = np.full(n, n_episode // n)
    quota[: n_episode % n] += 1
    obs, _ = env.reset(seed=first_seed.pop() if first_seed else None)
    ep_ret, count, skip = np.zeros(n), np.zeros(n, int), np.zeros(n, bool)
    returns: List[float] = []
    next_step = env.metadata.get("autoreset_mode") != AutoresetMode.SAME_STEP
    while (count < quota).any():
        with torch.inference_mode():
            action = act(torch.as_tensor(obs))
        obs, r, term, trunc, _ = env.step(action)
        ep_ret += np.where(skip, 0.0, r)
        done = (term | trunc) & ~skip
        for i in np.flatnonzero(done):
            if count[i] < quota[i]:
                returns.append(float(ep_ret[i]))
                count[i] += 1
        ep_ret[done] = 0.0
        if next_step:
            skip = done
    return float(np.mean(returns))


# ------------------------------------------------------------------------------------------------
# plain PPO
# ------------------------------------------------------------------------------------------------
def ortho(layer: nn.Module, gain: float) -> None:
    if isinstance(layer, nn.Linear):
        nn.init.orthogonal_(layer.weight, gain)
        nn.init.zeros_(layer.bias)


def plain_ppo(cfg: Any, seed: int, budget: int) -> Dict[str, Any]:
    p, learn = cfg.policy, cfg.policy.learn
    start, cpu_start = time.perf_counter(), time.process_time()
    torch.manual_seed(seed)
    env = gym.make_vec(cfg.env.id, num_envs=cfg.env.n_envs, vectorization_mode="vector_entry_point")
    eval_env = gym.make_vec(cfg.env.id, num_envs=cfg.env.eval_n_envs,
                            vectorization_mode="vector_entry_point")
    n_envs, T = env.num_envs, p.collect.n_sample // env.num_envs
    obs_dim, n_act = env.single_observation_space.shape[0], int(env.single_action_space.n)
    hidden = list(p.model.hidden)
    actor = mlp([obs_dim, *hidden, n_act], nn.Tanh)
    critic = mlp([obs_dim, *hidden, 1], nn.Tanh)
    for net, out_gain in ((actor, 0.01), (critic, 1.0)):
        for layer in net:
            ortho(layer, math.sqrt(2.0))
        ortho(net[-1], out_gain)
    params = list(actor.parameters()) + list(critic.parameters())
    opt = torch.optim.Adam(params, lr=learn.lr, eps=1e-5)

    def evaluate() -> float:
        return run_eval(eval_env, lambda o: actor(o).argmax(1).numpy(), p.eval.evaluator.n_episode,
                        first_seed)

    b_obs = np.zeros((T, n_envs, obs_dim), np.float32)
    b_act = np.zeros((T, n_envs), np.int64)
    b_logp, b_val, b_rew = (np.zeros((T, n_envs), np.float32) for _ in range(3))
    b_term, b_done, b_valid = (np.zeros((T, n_envs), bool) for _ in range(3))
    first_seed = [seed + 10_000]
    obs, _ = env.reset(seed=seed)
    skip = np.zeros(n_envs, bool)  # NEXT_STEP: the row after an episode end is no transition
    env_step = updates = learned = 0
    last_eval, evals, eval_time = -1, [], 0.0
    while env_step < budget:
        if last_eval < 0 or updates - last_eval >= p.eval.evaluator.eval_freq:
            t0 = time.perf_counter()
            evals.append(evaluate())
            eval_time += time.perf_counter() - t0
            last_eval = updates
        for t in range(T):  # collect
            with torch.inference_mode():
                obs_t = torch.as_tensor(obs)
                dist = Categorical(logits=actor(obs_t), validate_args=False)
                action = dist.sample()
                b_logp[t] = dist.log_prob(action).numpy()
                b_val[t] = critic(obs_t).squeeze(1).numpy()
            b_obs[t], b_act[t], b_valid[t] = obs, action.numpy(), ~skip
            obs, b_rew[t], b_term[t], trunc, _ = env.step(b_act[t])
            b_done[t] = skip = b_term[t] | trunc
            env_step += int(b_valid[t].sum())
        with torch.inference_mode():  # the obs after a done step is the final obs (NEXT_STEP)
            last_val = critic(torch.as_tensor(obs)).squeeze(1).numpy()
        # GAE: next value = V(obs[t + 1]) (the true final obs after a truncation); termination
        # stops the bootstrap, any episode end cuts the recursion
        next_val = np.concatenate([b_val[1:], last_val[None]])
        delta = b_rew + learn.gamma * ~b_term * next_val - b_val
        adv = np.zeros_like(b_rew)
        running = np.zeros(n_envs, np.float32)
        for t in reversed(range(T)):
            running = delta[t] + learn.gamma * learn.gae_lambda * ~b_done[t] * running
            adv[t] = running
        rows = b_valid.reshape(-1)
        o = torch.as_tensor(b_obs.reshape(-1, obs_dim)[rows])
        a = torch.as_tensor(b_act.reshape(-1)[rows])
        old_logp = torch.as_tensor(b_logp.reshape(-1)[rows])
        adv_t = torch.as_tensor(adv.reshape(-1)[rows])
        ret = adv_t + torch.as_tensor(b_val.reshape(-1)[rows])
        n = o.shape[0]
        lr = learn.lr * max(0.0, 1.0 - learned / learn.lr_decay_env_steps)
        for group in opt.param_groups:
            group["lr"] = lr
        for _ in range(learn.epoch_per_collect):  # learn
            perm = torch.randperm(n)
            for i in range(0, n, learn.batch_size):
                idx = perm[i:i + learn.batch_size]
                dist = Categorical(logits=actor(o[idx]), validate_args=False)
                log_ratio = dist.log_prob(a[idx]) - old_logp[idx]
                ratio = log_ratio.exp()
                mb_adv = adv_t[idx]
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = torch.max(-mb_adv * ratio, -mb_adv * ratio.clamp(
                    1 - learn.clip_ratio, 1 + learn.clip_ratio)).mean()
                v_loss = 0.5 * (critic(o[idx]).squeeze(1) - ret[idx]).pow(2).mean()
                entropy = dist.entropy().mean()
                loss = pg_loss + learn.value_coef * v_loss - learn.entropy_coef * entropy
                opt.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(params, learn.grad_clip)
                opt.step()
                updates += 1
        learned += n
    env.close()
    eval_env.close()
    return {"env_step": env_step, "train_iter": updates, "final": evals[-1], "best": max(evals),
            "evals": len(evals), "eval_time": eval_time, "wall_time": time.perf_counter() - start,
            "cpu_time": time.process_time() - cpu_start}


# ------------------------------------------------------------------------------------------------
# driver
# ------------------------------------------------------------------------------------------------
PLAIN = {"pendulum-sac": plain_sac, "cartpole-ppo": plain_ppo}


def rlpipe_run(name: str, seed: int, budget: int) -> Dict[str, Any]:
    start, cpu_start = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory() as run_dir:
        r = train(name, seed=seed, overrides=NO_STOP, max_env_step=budget, run_dir=run_dir,
                  progress=False)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    profile = r["profile"]
    eval_time = sum(m.total_s for m in profile.middleware if "evaluator" in m.name)
    return {"env_step": r["env_step"], "train_iter": r["train_iter"], "final": r["eval_value"],
            "best": r["best_eval_value"], "eval_time": eval_time, "wall_time": wall,
            "cpu_time": cpu, "profile": profile}


def warm_up() -> None:
    """Pay torch's one-time costs before the timed runs (the first optimiser step imports
    torch's compiler stack, about a second), so the first run of the process is not charged."""
    for fused in (True, False):
        w = nn.Parameter(torch.zeros(3))
        opt = torch.optim.Adam([w], fused=fused)
        w.sum().backward()
        opt.step()


def report(name: str, seed: int, kind: str, r: Dict[str, Any]) -> None:
    per_step = 1e3 * r["wall_time"] / r["env_step"]
    no_eval = 1e3 * (r["wall_time"] - r["eval_time"]) / r["env_step"]
    print(f"{name:13s}{seed:5d}  {kind:7s}{r['wall_time']:8.1f}{r['cpu_time']:7.1f}"
          f"{r['eval_time']:7.1f}{r['env_step']:8d}{r['train_iter']:8d}{per_step:9.3f}"
          f"{no_eval:9.3f}{r['final']:9.1f}{r['best']:9.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", nargs="+", default=list(PLAIN), choices=list(PLAIN))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--sac-budget", type=int, default=20_000)
    parser.add_argument("--ppo-budget", type=int, default=50_000)
    parser.add_argument("--quick", action="store_true", help="smoke run: one seed, 3k / 10k steps")
    parser.add_argument("--profile", action="store_true", help="print rlpipe's middleware profile")
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.sac_budget, args.ppo_budget = args.seeds[:1], 3_000, 10_000
    budgets = {"pendulum-sac": args.sac_budget, "cartpole-ppo": args.ppo_budget}
    torch.set_num_threads(1)  # as the zoo does
    warm_up()

    print("wall s: whole run incl. setup; cpu s: its process CPU time; eval s: wall time in "
          "evaluation;\nms/step: wall / env steps; -eval: (wall - eval) / env steps")
    print(f"{'entry':13s}{'seed':>5s}  {'run':7s}{'wall s':>8s}{'cpu s':>7s}{'eval s':>7s}"
          f"{'steps':>8s}{'updates':>8s}{'ms/step':>9s}{'-eval':>9s}{'final':>9s}{'best':>9s}")
    summary = []
    for name in args.entries:
        budget = budgets[name]
        cfg = entry_config(name, budget)
        rows: Dict[str, List[Dict[str, Any]]] = {"plain": [], "rlpipe": []}
        for k, seed in enumerate(args.seeds):
            order = ["plain", "rlpipe"] if k % 2 == 0 else ["rlpipe", "plain"]
            for kind in order:
                if kind == "plain":
                    r = PLAIN[name](cfg, seed, budget)
                else:
                    r = rlpipe_run(name, seed, budget)
                rows[kind].append(r)
                report(name, seed, kind, r)
                if kind == "rlpipe" and args.profile:
                    print("    " + str(r["profile"]).replace("\n", "\n    "), flush=True)

        def mean(kind: str, key: Callable[[Dict[str, Any]], float]) -> float:
            return float(np.mean([key(r) / r["env_step"] for r in rows[kind]]))

        total = {k: mean(k, lambda r: r["wall_time"]) for k in rows}
        no_eval = {k: mean(k, lambda r: r["wall_time"] - r["eval_time"]) for k in rows}
        cpu = {k: mean(k, lambda r: r["cpu_time"]) for k in rows}
        ratios = [a["wall_time"] / a["env_step"] / (b["wall_time"] / b["env_step"])
                  for a, b in zip(rows["rlpipe"], rows["plain"])]
        summary.append(
            f"{name}: wall time per env step plain {1e3 * total['plain']:.3f} ms, rlpipe "
            f"{1e3 * total['rlpipe']:.3f} ms -> rlpipe/plain "
            f"{total['rlpipe'] / total['plain']:.2f}x"
            f" (per seed {', '.join(f'{x:.2f}' for x in ratios)}; target <= 1.15x); without "
            f"evaluation {no_eval['rlpipe'] / no_eval['plain']:.2f}x; CPU time per env step "
            f"{cpu['rlpipe'] / cpu['plain']:.2f}x")
    print()
    print("\n".join(summary))


if __name__ == "__main__":
    main()
