"""One learner update: rlpipe's `policy.learn_mode.forward(batch)` against a bare torch loop.

For each algorithm, rlpipe's policy is built at its default config from a small env's spaces
(DQN: CartPole's; the others: Pendulum's) and fed one fixed batch of random transitions of
its default batch size, as the learner middleware feeds it (numpy arrays). The bare loop in this
file builds plain `nn.Sequential` networks of the same shapes, the same Adam (fused, same lr)
per network, and does the same math per update written out directly: the same forward passes,
losses, backward passes, optimizer steps, target updates (a foreach lerp or a hard copy) and
gradient-norm clipping where the policy clips. Its batch is converted from the same numpy arrays
at each update (as the policy converts it) and it reads one scalar loss back per update, as a
training loop that logs would; the policy reads back its statistics.

- dqn: double-Q Huber TD loss, grad norm 10, hard target copy every 500 updates.
- sac: twin critics on the soft target, squashed Gaussian actor, automatic temperature,
  critics frozen during the actor step, Polyak targets every update.
- td3: twin critics on the smoothed target, actor and targets every second update.
- bc: MSE of a deterministic actor to the batch's actions in [-1, 1].
- iql: expectile V, twin Q's on r + γ V(s'), advantage-weighted Gaussian actor, Polyak targets.
- td3-bc: TD3 on normalised observations with the λ-weighted Q plus BC actor loss.
- cql: SAC without the entropy backup, plus the conservative gap over 3 × 10 sampled actions.
- ppo: one learn call = 10 epochs over a 256-row CartPole rollout in minibatches of 64 (40
  gradient steps), the clipped objective, grad norm 0.5.

- ppo-lstm: one learn call = 10 epochs over an 8 × 32 rollout with episode starts inside it
  (one minibatch of 8 chunks of 32 steps), actor and critic LSTMs re-run from the recorded
  states (the bare loop: zero-padded episode segments, one LSTM call per core), grad norm 0.5.
- r2d2: 64 sequences of 40 burn-in + 80 steps, LSTM 512, burn-in without gradient, 5-step
  double-Q targets with value rescaling, importance weights, priorities read back.
- mappo: one learn call = 10 epochs over 200 env rows × 3 agents (18-dim observations, a
  54-dim global state, 5 actions), ValueNorm, clipped Huber value loss, two clipped norms.

Timing is this process's CPU time (`time.process_time`), one torch thread, after a warm-up; each
round times N updates of each side (N fills about --round-ms of CPU time, unless --updates sets
it), the side that runs first alternating by round, and the table shows the median per-update
time over rounds.

Run:  python benchmarks/learner_vs_bare.py [--rounds 7] [--round-ms 1000] [--algos dqn sac ...]
      python benchmarks/learner_vs_bare.py --quick      (dqn and bc, 2 rounds of 5 updates)
"""
from __future__ import annotations

import argparse
import math
import statistics
import pathlib
import sys
import time
from typing import Any, Callable, Dict, List, NamedTuple, Sequence, Tuple

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import Categorical

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from rlpipe.policies import get_policy  # noqa: E402

CARTPOLE_OBS = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
CARTPOLE_ACT = gym.spaces.Discrete(2)
PENDULUM_OBS = gym.spaces.Box(-8.0, 8.0, (3,), np.float32)
PENDULUM_ACT = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)


def mlp(sizes: List[int], activate_last: bool = False) -> nn.Sequential:
    layers: List[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2 or activate_last:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def adam(params, lr: float) -> torch.optim.Adam:
    return torch.optim.Adam(list(params), lr=lr, fused=True)


def transitions(obs_space: gym.spaces.Box, action_space: gym.Space,
                n: int) -> Dict[str, np.ndarray]:
    """n random one-step transitions in env units, as a replay buffer's sample holds them."""
    rng = np.random.default_rng(0)
    obs_dim = obs_space.shape[0]
    if isinstance(action_space, gym.spaces.Discrete):
        action = rng.integers(action_space.n, size=n).astype(np.int64)
    else:
        action = rng.uniform(action_space.low, action_space.high,
                             (n, *action_space.shape)).astype(np.float32)
    return {"obs": rng.normal(size=(n, obs_dim)).astype(np.float32), "action": action,
            "reward": rng.normal(size=n).astype(np.float32),
            "next_obs": rng.normal(size=(n, obs_dim)).astype(np.float32),
            "terminated": rng.random(n) < 0.05, "truncated": np.zeros(n, bool)}


def sized_cfg(hidden: Sequence[int] | None, batch_size: int | None,
              nets: Sequence[str]) -> Dict[str, Any]:
    """A policy config at its defaults except, where given, the layers of each network named in
    `nets` (model keys such as "actor_hidden") and the batch size."""
    cfg: Dict[str, Any] = {"seed": 0}
    if hidden is not None:
        cfg["model"] = {net: tuple(hidden) for net in nets}
    if batch_size is not None:
        cfg["learn"] = {"batch_size": batch_size}
    return cfg


# ------------------------------------------------------------------------------------------------
# bare updates: each builder returns a Case
# ------------------------------------------------------------------------------------------------
class Case(NamedTuple):
    policy: Any                             # rlpipe's policy at its default config
    batch: Dict[str, np.ndarray]            # the fixed batch both sides learn from
    update: Callable[[], float]             # one bare update; returns the loss read back
    optimizers: List[torch.optim.Optimizer]  # the bare loop's (to compare with the policy's)


def bare_dqn() -> Case:
    policy = get_policy("dqn")({"seed": 0}, CARTPOLE_OBS, CARTPOLE_ACT)
    c = policy.cfg.learn
    batch = transitions(CARTPOLE_OBS, CARTPOLE_ACT, c.batch_size)
    online = mlp([4, *policy.cfg.model.hidden, 2])
    target = mlp([4, *policy.cfg.model.hidden, 2]).requires_grad_(False)
    target.load_state_dict(online.state_dict())
    params = list(online.parameters())
    opt = adam(params, c.lr)
    step = [0]

    def update() -> float:
        o, a = torch.from_numpy(batch["obs"]), torch.from_numpy(batch["action"]).view(-1, 1)
        r, no = torch.from_numpy(batch["reward"]), torch.from_numpy(batch["next_obs"])
        d = torch.from_numpy(batch["terminated"]).float()
        with torch.no_grad():
            nq_t = target(no)
            na = online(no).argmax(1, keepdim=True)
            y = r + c.gamma * (1.0 - d) * nq_t.gather(1, na).squeeze(1)
        q = online(o).gather(1, a).squeeze(1)
        loss = F.smooth_l1_loss(q, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(params, c.grad_clip)
        opt.step()
        step[0] += 1
        if step[0] % c.target_update_freq == 0:
            target.load_state_dict(online.state_dict())
        return loss.item()

    return Case(policy, batch, update, [opt])


class BareSquashed(nn.Module):
    """trunk → (mean, log std squashed into [lo, hi]); sample → tanh(u), log π."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: List[int], lo: float, hi: float):
        super().__init__()
        self.trunk = mlp([obs_dim, *hidden], activate_last=True)
        self.mean, self.log_std = nn.Linear(hidden[-1], act_dim), nn.Linear(hidden[-1], act_dim)
        self.lo, self.hi = lo, hi

    def sample(self, obs: torch.Tensor, n: int = 1) -> Tuple[torch.Tensor, torch.Tensor]:
        """One action per state, or n per state (rows [B·n]: the Gaussian repeated)."""
        h = self.trunk(obs)
        mean = self.mean(h)
        log_std = self.lo + 0.5 * (self.hi - self.lo) * (torch.tanh(self.log_std(h)) + 1.0)
        if n > 1:
            mean, log_std = mean.repeat_interleave(n, 0), log_std.repeat_interleave(n, 0)
        noise = torch.randn_like(mean)
        u = mean + log_std.exp() * noise
        logp = (-0.5 * noise.pow(2) - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        logp = logp - (2.0 * (math.log(2.0) - u - F.softplus(-2.0 * u))).sum(-1)
        return torch.tanh(u), logp


def twin(obs_dim: int, act_dim: int, hidden: List[int]) -> Tuple[nn.ModuleList, nn.ModuleList]:
    qs = nn.ModuleList(mlp([obs_dim + act_dim, *hidden, 1]) for _ in range(2))
    qt = nn.ModuleList(mlp([obs_dim + act_dim, *hidden, 1]) for _ in range(2))
    qt.load_state_dict(qs.state_dict())
    return qs, qt.requires_grad_(False)


def both_q(qs: nn.ModuleList, o: torch.Tensor, a: torch.Tensor):
    x = torch.cat([o, a], 1)
    return qs[0](x).squeeze(1), qs[1](x).squeeze(1)


def continuous_batch(batch: Dict[str, np.ndarray]):
    """Tensors of the batch, its actions mapped from Pendulum's [-2, 2] to [-1, 1]."""
    o, no = torch.from_numpy(batch["obs"]), torch.from_numpy(batch["next_obs"])
    a = torch.from_numpy(batch["action"]) / 2.0
    r, d = torch.from_numpy(batch["reward"]), torch.from_numpy(batch["terminated"]).float()
    return o, a, r, no, d


def bare_sac(cql: bool = False, hidden: Sequence[int] | None = None,
             batch_size: int | None = None) -> Case:
    """SAC, or with `cql` CQL(H) at its defaults: the target without the entropy term, and the
    critics' loss plus α_cql Σ_i mean(T logsumexp_j((Q_i(s, a_j) − log μ(a_j)) / T) − Q_i(s, a))
    over n uniform actions and n actions of π at s and at s' per state. `hidden` and
    `batch_size` replace the policy's default layers (actor and critics) and batch size."""
    cfg = sized_cfg(hidden, batch_size, ("actor_hidden", "critic_hidden"))
    policy = get_policy("cql" if cql else "sac")(cfg, PENDULUM_OBS, PENDULUM_ACT)
    c, m = policy.cfg.learn, policy.cfg.model
    batch = transitions(PENDULUM_OBS, PENDULUM_ACT, c.batch_size)
    actor = BareSquashed(3, 1, list(m.actor_hidden), m.log_std_min, m.log_std_max)
    qs, qt = twin(3, 1, list(m.critic_hidden))
    q_params, qt_params = list(qs.parameters()), list(qt.parameters())
    log_alpha = torch.tensor(math.log(c.init_alpha), requires_grad=True)
    q_opt, a_opt = adam(q_params, c.critic_lr), adam(actor.parameters(), c.actor_lr)
    alpha_opt = adam([log_alpha], c.alpha_lr)
    optimizers = [q_opt, a_opt, alpha_opt]
    if cql:  # the Lagrange multiplier's optimizer, idle at the default fixed α_cql
        optimizers.append(adam([torch.zeros((), requires_grad=True)], c.alpha_prime_lr))

    def penalty(o: torch.Tensor, no: torch.Tensor, q_data: Tuple[torch.Tensor, ...]):
        rows, n = o.shape[0], c.cql_n_actions
        with torch.no_grad():
            uniform = torch.rand((rows, n, 1)) * 2 - 1
            current, current_logp = actor.sample(o, n)
            following, following_logp = actor.sample(no, n)
            acts = torch.cat([uniform, current.view(rows, n, 1), following.view(rows, n, 1)], 1)
            log_mu = torch.cat([torch.full((rows, n), math.log(0.5)), current_logp.view(rows, n),
                                following_logp.view(rows, n)], 1)
        q_sampled = both_q(qs, o.repeat_interleave(3 * n, 0), acts.view(rows * 3 * n, 1))
        t = c.cql_temperature
        gaps = [(t * torch.logsumexp((qs_.view(rows, 3 * n) - log_mu) / t, -1) - qd).mean()
                for qs_, qd in zip(q_sampled, q_data)]
        return c.cql_alpha * (gaps[0] + gaps[1])

    def update() -> float:
        o, a, r, no, d = continuous_batch(batch)
        with torch.no_grad():
            na, nlogp = actor.sample(no)
            next_value = torch.min(*both_q(qt, no, na))
            if not cql:
                next_value = next_value - log_alpha.exp() * nlogp
            y = r + c.gamma * (1.0 - d) * next_value
        q1, q2 = both_q(qs, o, a)
        q_loss = F.mse_loss(q1, y) + F.mse_loss(q2, y)
        if cql:
            q_loss = q_loss + penalty(o, no, (q1, q2))
        q_opt.zero_grad(set_to_none=True)
        q_loss.backward()
        q_opt.step()
        pa, logp = actor.sample(o)
        alpha = log_alpha.detach().exp()
        for p in q_params:
            p.requires_grad_(False)
        actor_loss = (alpha * logp - torch.min(*both_q(qs, o, pa))).mean()
        for p in q_params:
            p.requires_grad_(True)
        a_opt.zero_grad(set_to_none=True)
        actor_loss.backward()
        alpha_loss = -(log_alpha * (logp.detach() - 1.0)).mean()
        alpha_opt.zero_grad(set_to_none=True)
        alpha_loss.backward()
        a_opt.step()
        alpha_opt.step()
        torch._foreach_lerp_(qt_params, q_params, c.tau)
        return q_loss.item()

    return Case(policy, batch, update, optimizers)


def bare_cql(hidden: Sequence[int] | None = None, batch_size: int | None = None) -> Case:
    return bare_sac(cql=True, hidden=hidden, batch_size=batch_size)


def bare_td3(bc: bool = False, hidden: Sequence[int] | None = None,
             batch_size: int | None = None) -> Case:
    """TD3, or with `bc` TD3+BC: observations normalised by the data's mean and std (the policy
    is told the same), the actor loss −λ Q1(s, π(s)) + (π(s) − a)² with λ = α / mean |Q1|.
    `hidden` and `batch_size` replace the default layers (actor and critics) and batch size."""
    cfg = sized_cfg(hidden, batch_size, ("actor_hidden", "critic_hidden"))
    policy = get_policy("td3-bc" if bc else "td3")(cfg, PENDULUM_OBS, PENDULUM_ACT)
    c, m = policy.cfg.learn, policy.cfg.model
    batch = transitions(PENDULUM_OBS, PENDULUM_ACT, c.batch_size)
    if bc:
        data = np.concatenate([batch["obs"], batch["next_obs"]])
        mean, std = data.mean(0), data.std(0)
        policy.set_obs_normalizer(mean, std)
        obs_mean, obs_scale = torch.from_numpy(mean), torch.from_numpy(std) + 1e-3

    def make_actor() -> nn.Sequential:
        return nn.Sequential(mlp([3, *m.actor_hidden, 1]), nn.Tanh())

    actor, actor_t = make_actor(), make_actor().requires_grad_(False)
    actor_t.load_state_dict(actor.state_dict())
    qs, qt = twin(3, 1, list(m.critic_hidden))
    q_params = list(qs.parameters())
    online = list(actor.parameters()) + q_params
    targets = list(actor_t.parameters()) + list(qt.parameters())
    q_opt, a_opt = adam(q_params, c.critic_lr), adam(actor.parameters(), c.actor_lr)
    step = [0]

    def update() -> float:
        o, a, r, no, d = continuous_batch(batch)
        if bc:
            o, no = (o - obs_mean) / obs_scale, (no - obs_mean) / obs_scale
        with torch.no_grad():
            na = actor_t(no)
            noise = (torch.randn_like(na) * c.target_noise).clamp(-c.target_noise_clip,
                                                                   c.target_noise_clip)
            na = (na + noise).clamp(-1.0, 1.0)
            y = r + c.gamma * (1.0 - d) * torch.min(*both_q(qt, no, na))
        q1, q2 = both_q(qs, o, a)
        q_loss = F.mse_loss(q1, y) + F.mse_loss(q2, y)
        q_opt.zero_grad(set_to_none=True)
        q_loss.backward()
        q_opt.step()
        step[0] += 1
        if step[0] % c.policy_delay == 0:
            for p in q_params:
                p.requires_grad_(False)
            pi = actor(o)
            q = qs[0](torch.cat([o, pi], 1))
            if bc:
                actor_loss = -c.alpha / q.abs().mean().detach() * q.mean() + F.mse_loss(pi, a)
            else:
                actor_loss = -q.mean()
            for p in q_params:
                p.requires_grad_(True)
            a_opt.zero_grad(set_to_none=True)
            actor_loss.backward()
            a_opt.step()
            torch._foreach_lerp_(targets, online, c.tau)
        return q_loss.item()

    return Case(policy, batch, update, [q_opt, a_opt])


def bare_td3_bc(hidden: Sequence[int] | None = None, batch_size: int | None = None) -> Case:
    return bare_td3(bc=True, hidden=hidden, batch_size=batch_size)


def bare_iql(hidden: Sequence[int] | None = None, batch_size: int | None = None) -> Case:
    """IQL: V by expectile regression on the target critics' min, both Q's on r + γ V(s'),
    a state-independent Gaussian actor by advantage-weighted log-likelihood, Polyak targets.
    `hidden` and `batch_size` replace the default layers (actor, critics, V) and batch size."""
    cfg = sized_cfg(hidden, batch_size, ("actor_hidden", "critic_hidden", "value_hidden"))
    policy = get_policy("iql")(cfg, PENDULUM_OBS, PENDULUM_ACT)
    c, m = policy.cfg.learn, policy.cfg.model
    batch = transitions(PENDULUM_OBS, PENDULUM_ACT, c.batch_size)
    trunk = mlp([3, *m.actor_hidden], activate_last=True)
    mean_head = nn.Linear(m.actor_hidden[-1], 1)
    log_std = nn.Parameter(torch.zeros(1))
    actor_params = [*trunk.parameters(), *mean_head.parameters(), log_std]
    value = mlp([3, *m.value_hidden, 1])
    qs, qt = twin(3, 1, list(m.critic_hidden))
    q_params, qt_params = list(qs.parameters()), list(qt.parameters())
    v_opt, q_opt = adam(value.parameters(), c.value_lr), adam(q_params, c.critic_lr)
    a_opt = adam(actor_params, c.actor_lr)

    def update() -> float:
        o, a, r, no, d = continuous_batch(batch)
        with torch.no_grad():
            q_hat = torch.min(*both_q(qt, o, a))
        u = q_hat - value(o).squeeze(1)
        v_loss = (torch.abs(c.expectile - (u < 0).float()) * u.pow(2)).mean()
        v_opt.zero_grad(set_to_none=True)
        v_loss.backward()
        v_opt.step()
        with torch.no_grad():
            v = value(o).squeeze(1)
            y = r + c.gamma * (1.0 - d) * value(no).squeeze(1)
        q1, q2 = both_q(qs, o, a)
        q_loss = F.mse_loss(q1, y) + F.mse_loss(q2, y)
        q_opt.zero_grad(set_to_none=True)
        q_loss.backward()
        weight = torch.exp(c.beta * (q_hat - v)).clamp(max=c.max_weight)
        ls = log_std.clamp(m.log_std_min, m.log_std_max)
        z = (a - torch.tanh(mean_head(trunk(o)))) * torch.exp(-ls)
        logp = (-0.5 * z.pow(2) - ls - 0.5 * math.log(2 * math.pi)).sum(-1)
        actor_loss = -(weight * logp).mean()
        a_opt.zero_grad(set_to_none=True)
        actor_loss.backward()
        q_opt.step()
        a_opt.step()
        torch._foreach_lerp_(qt_params, q_params, c.tau)
        return q_loss.item()

    return Case(policy, batch, update, [v_opt, q_opt, a_opt])


PPO_ROWS = 256  # one rollout: 8 envs × 32 steps, as cartpole-ppo collects


def bare_ppo() -> Case:
    """PPO: one learn call is epoch_per_collect passes over a 256-row rollout in shuffled
    minibatches; separate tanh actor and critic MLPs, the clipped objective with per-minibatch
    advantage normalisation, ½ squared value error, grad norm 0.5 (the policy reports it)."""
    policy = get_policy("ppo")({"seed": 0}, CARTPOLE_OBS, CARTPOLE_ACT)
    c, hidden = policy.cfg.learn, list(policy.cfg.model.hidden)
    rng = np.random.default_rng(0)
    batch = {"obs": rng.normal(size=(PPO_ROWS, 4)).astype(np.float32),
             "action": rng.integers(2, size=PPO_ROWS).astype(np.int64),
             "logp": np.full(PPO_ROWS, math.log(0.5), np.float32),
             "adv": rng.normal(size=PPO_ROWS).astype(np.float32),
             "return": rng.normal(size=PPO_ROWS).astype(np.float32)}

    def tanh_mlp(sizes: List[int]) -> nn.Sequential:
        layers: List[nn.Module] = []
        for a, b in zip(sizes[:-1], sizes[1:]):
            layers += [nn.Linear(a, b), nn.Tanh()]
        return nn.Sequential(*layers)

    actor, critic = tanh_mlp([4, *hidden]), tanh_mlp([4, *hidden])
    action_head, value_head = nn.Linear(hidden[-1], 2), nn.Linear(hidden[-1], 1)
    params = [*actor.parameters(), *critic.parameters(), *action_head.parameters(),
              *value_head.parameters()]
    opt = adam(params, c.lr)
    gen = torch.Generator().manual_seed(1)

    def update() -> float:
        o, a = torch.from_numpy(batch["obs"]), torch.from_numpy(batch["action"])
        old_logp, all_adv = torch.from_numpy(batch["logp"]), torch.from_numpy(batch["adv"])
        ret = torch.from_numpy(batch["return"])
        for _ in range(c.epoch_per_collect):
            order = torch.randperm(PPO_ROWS, generator=gen)
            for i in range(0, PPO_ROWS, c.batch_size):
                idx = order[i:i + c.batch_size]
                ob = o[idx]
                dist = Categorical(logits=action_head(actor(ob)), validate_args=False)
                value = value_head(critic(ob)).squeeze(-1)
                ratio = (dist.log_prob(a[idx]) - old_logp[idx]).exp()
                adv = all_adv[idx]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                policy_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - c.clip_ratio,
                                                                         1 + c.clip_ratio)).mean()
                value_loss = (0.5 * (value - ret[idx]) ** 2).mean()
                entropy = dist.entropy().mean()
                loss = policy_loss + c.value_coef * value_loss - c.entropy_coef * entropy
                opt.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(params, c.grad_clip)
                opt.step()
        return loss.item()

    return Case(policy, batch, update, [opt])


def bare_bc() -> Case:
    policy = get_policy("bc")({"seed": 0}, PENDULUM_OBS, PENDULUM_ACT)
    c = policy.cfg.learn
    batch = transitions(PENDULUM_OBS, PENDULUM_ACT, c.batch_size)
    net = nn.Sequential(mlp([3, *policy.cfg.model.hidden, 1]), nn.Tanh())
    params = list(net.parameters())
    opt = adam(params, c.lr)

    def update() -> float:
        o, a = torch.from_numpy(batch["obs"]), torch.from_numpy(batch["action"]) / 2.0
        loss = F.mse_loss(net(o), a)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(params, math.inf)  # the policy reports the grad norm
        opt.step()
        return loss.item()

    return Case(policy, batch, update, [opt])


# --- recurrent and multi-agent learners ---------------------------------------------------------
NOVEL_OBS = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)  # CartPole without velocities
LSTM_ENVS, LSTM_STEPS = 8, 32  # one LSTM-PPO rollout, as cartpole-novel-ppo-lstm collects


def lstm_rollout(policy: Any) -> Dict[str, Any]:
    """One recurrent rollout of 8 envs × 32 steps through gae_estimator's recurrent path:
    episodes start inside it (5% of steps), each env begins from a recorded non-zero state."""
    from rlpipe.middleware.onpolicy import recurrent_rollout

    rng = np.random.default_rng(0)
    T, N, H = LSTM_STEPS, LSTM_ENVS, policy.cfg.model.core_size
    first = rng.random((T, N)) < 0.05
    terminated = np.zeros((T, N), bool)
    terminated[:-1] = first[1:]
    obs = rng.normal(size=(T + 1, N, 2)).astype(np.float32)

    def state() -> Dict[str, np.ndarray]:
        return {k: (0.1 * rng.normal(size=(N, H))).astype(np.float32) for k in ("h", "c")}

    steps = [dict(obs=obs[t], next_obs=obs[t + 1], action=rng.integers(2, size=N),
                  reward=np.ones(N, np.float32), terminated=terminated[t],
                  truncated=np.zeros(N, bool), first=first[t],
                  value=rng.normal(size=N).astype(np.float32),
                  logp=np.full(N, math.log(0.5), np.float32),
                  state={"actor": state(), "critic": state()}) for t in range(T)]
    c = policy.cfg.learn
    return recurrent_rollout(steps, c.gamma, c.gae_lambda,
                             lambda data: rng.normal(size=(T, N)).astype(np.float32))


def episode_segments(first: torch.Tensor) -> Tuple[torch.Tensor, ...]:
    """Rows [B, L] cut at their episode starts: (segment of each step, its position in the
    segment, the flat index of each segment's first step, the longest segment's length)."""
    batch, steps = first.shape
    begins = first.reshape(-1).clone()
    begins[::steps] = True
    starts = begins.nonzero().squeeze(1)
    seg = begins.long().cumsum(0) - 1
    pos = torch.arange(batch * steps) - starts[seg]
    longest = int(torch.diff(starts, append=starts.new_tensor([batch * steps])).max())
    return seg, pos, starts, longest


def bare_ppo_lstm() -> Case:
    """LSTM-PPO: one learn call is epoch_per_collect passes over one 8 × 32 rollout (chunks of
    32 steps: one minibatch of 8 chunks). Separate actor and critic LSTMs over the raw
    observation, each followed by a ReLU layer and its head; every chunk re-run from its
    recorded state, cut at its episode starts into zero-padded segments (sb3-contrib's
    RecurrentPPO layout), one LSTM call per core; the clipped objective over the real steps,
    advantages normalised with the sample std, ½ squared value error, grad norm 0.5."""
    policy = get_policy("ppo-lstm")({"seed": 0}, NOVEL_OBS, CARTPOLE_ACT)
    c, m = policy.cfg.learn, policy.cfg.model
    batch = lstm_rollout(policy)
    chunks = next(batch["rollout"].sequence_minibatches(c.chunk_len, 1, np.random.default_rng(0)))
    H, width = m.core_size, m.hidden[-1]
    cores = nn.ModuleDict({p: nn.LSTM(2, H, batch_first=True) for p in ("actor", "critic")})
    actor = nn.Sequential(nn.Linear(H, width), nn.ReLU(), nn.Linear(width, 2))
    critic = nn.Sequential(nn.Linear(H, width), nn.ReLU(), nn.Linear(width, 1))
    params = [*cores.parameters(), *actor.parameters(), *critic.parameters()]
    opt = adam(params, c.lr)
    gen = torch.Generator().manual_seed(1)

    def update() -> float:
        o, a = torch.from_numpy(chunks["obs"]), torch.from_numpy(chunks["action"])
        old_logp, all_adv = torch.from_numpy(chunks["logp"]), torch.from_numpy(chunks["advantage"])
        ret, mask = torch.from_numpy(chunks["return"]), torch.from_numpy(chunks["mask"]).bool()
        first = torch.from_numpy(chunks["first"]).bool()
        state = {p: {k: torch.from_numpy(v) for k, v in chunks["state"][p].items()}
                 for p in cores}
        B, L = first.shape
        for _ in range(c.epoch_per_collect):
            rows = torch.randperm(B, generator=gen)  # one minibatch of all chunks, shuffled
            f = first[rows]
            seg, pos, starts, longest = episode_segments(f)
            keep = (~f.reshape(-1)[starts]).float().unsqueeze(-1)  # zeros where a reset
            padded = o.new_zeros(starts.numel(), longest, 2).index_put(
                (seg, pos), o[rows].reshape(B * L, 2))
            out = {}
            for p, core in cores.items():
                h0 = tuple((state[p][k][rows][starts // L] * keep).unsqueeze(0) for k in "hc")
                out[p] = core(padded, h0)[0][seg, pos]  # [B·L, H] in step order
            dist = Categorical(logits=actor(out["actor"]), validate_args=False)
            value = critic(out["critic"]).squeeze(-1)
            w = mask[rows].reshape(-1)
            n = w.sum()
            ratio = torch.where(w, dist.log_prob(a[rows].reshape(-1))
                                - old_logp[rows].reshape(-1), 0.0).exp()
            adv = all_adv[rows].reshape(-1)
            mean = (adv * w).sum() / n
            adv = (adv - mean) / (((adv - mean) ** 2 * w).sum() / (n - 1)).sqrt().add(1e-8)
            policy_loss = (torch.max(-adv * ratio, -adv * ratio.clamp(
                1 - c.clip_ratio, 1 + c.clip_ratio)) * w).sum() / n
            value_loss = (0.5 * (value - ret[rows].reshape(-1)) ** 2 * w).sum() / n
            entropy = (dist.entropy() * w).sum() / n
            loss = policy_loss + c.value_coef * value_loss - c.entropy_coef * entropy
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(params, c.grad_clip)
            opt.step()
        return loss.item()

    return Case(policy, batch, update, [opt])


def r2d2_sequences(policy: Any) -> Dict[str, Any]:
    """A prioritized sample of `batch_size` stored sequences of burn_in + seq_len steps, as a
    SequenceReplayBuffer gives it: a quarter start an episode (first at step 0, zero state),
    a quarter end in a termination followed by padding (mask False), the rest are full."""
    c, H = policy.cfg.learn, policy.cfg.model.core_size
    B, L = c.batch_size, c.burn_in + c.seq_len
    rng = np.random.default_rng(0)
    first = np.zeros((B, L), bool)
    first[: B // 4, 0] = True
    mask = np.ones((B, L), bool)
    terminated = np.zeros((B, L), bool)
    for b in range(B // 4, B // 2):
        end = int(rng.integers(c.burn_in + 1, L))
        mask[b, end:] = False
        terminated[b, end - 1] = True
    return {"obs": rng.normal(size=(B, L, 2)).astype(np.float32) * mask[..., None],
            "next_obs": rng.normal(size=(B, L, 2)).astype(np.float32) * mask[..., None],
            "action": rng.integers(2, size=(B, L)) * mask, "first": first, "mask": mask,
            "reward": rng.normal(size=(B, L)).astype(np.float32) * mask,
            "terminated": terminated, "burn_in": c.burn_in,
            "state": {k: (0.1 * rng.normal(size=(B, H))).astype(np.float32) * ~first[:, :1]
                      for k in ("h", "c")},
            "weight": rng.uniform(0.5, 1.0, B).astype(np.float32)}


def bare_r2d2() -> Case:
    """R2D2: one update on 64 sequences of 40 burn-in + 80 learning steps; encoder (256 ReLU)
    → LSTM 512 → dueling head. The target net over the whole sequence and the online net over
    the burn-in run without gradient from the stored state, the online net over the learning
    part with it; 5-step double-Q targets with value rescaling, importance-weighted squared TD
    error per sequence, grad norm 40, per-step priorities read back; hard target copy every
    2,500 updates."""
    policy = get_policy("r2d2")({"seed": 0}, NOVEL_OBS, CARTPOLE_ACT)
    c, m = policy.cfg.learn, policy.cfg.model
    batch = r2d2_sequences(policy)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = mlp([2, *m.hidden], activate_last=True)
            self.core = nn.LSTM(m.hidden[-1], m.core_size, batch_first=True)
            self.adv, self.value = nn.Linear(m.core_size, 2), nn.Linear(m.core_size, 1)

        def forward(self, x: torch.Tensor, hc: Tuple[torch.Tensor, torch.Tensor]):
            out, hc = self.core(self.encoder(x), hc)
            adv = self.adv(out)
            return self.value(out) + adv - adv.mean(-1, keepdim=True), hc

    online, target = Net(), Net().requires_grad_(False)
    target.load_state_dict(online.state_dict())
    params = list(online.parameters())
    opt = torch.optim.Adam(params, lr=c.lr, eps=c.adam_eps, fused=True)
    eps, burn, gamma, n = c.rescale_eps, c.burn_in, c.gamma, c.nstep
    step = [0]

    def h(x: torch.Tensor) -> torch.Tensor:
        return torch.sign(x) * (torch.sqrt(x.abs() + 1.0) - 1.0) + eps * x

    def h_inv(x: torch.Tensor) -> torch.Tensor:
        root = (torch.sqrt(1.0 + 4.0 * eps * (x.abs() + 1.0 + eps)) - 1.0) / (2.0 * eps)
        return torch.sign(x) * (root * root - 1.0)

    def update() -> float:
        b = {k: torch.from_numpy(v) for k, v in batch.items() if isinstance(v, np.ndarray)}
        mask, first = b["mask"], b["first"]
        B, L = mask.shape
        rows, last = torch.arange(B), mask.sum(1) - 1
        x = torch.cat([b["obs"], torch.zeros(B, 1, 2)], 1)  # + the last step's next obs
        x[rows, last + 1] = b["next_obs"][rows, last]
        keep = (~first[:, :1]).float()  # a sequence that starts an episode starts from zeros
        hc = tuple((torch.from_numpy(batch["state"][k]) * keep).unsqueeze(0) for k in "hc")
        with torch.no_grad():
            q_next = target(x, hc)[0][:, burn:]
            _, warm = online(x[:, :burn], hc)
        q_online, _ = online(x[:, burn:], warm)
        with torch.no_grad():  # n-step targets that stop at the sequence's end
            valid = mask[:, burn:].float()
            T = valid.shape[1]
            r = F.pad(b["reward"][:, burn:] * valid, (0, n))
            v = F.pad(valid, (0, n))
            d = F.pad(b["terminated"][:, burn:].float() * valid, (0, n))
            ret, steps, done = torch.zeros_like(valid), torch.zeros_like(valid), torch.zeros_like(valid)
            for i in range(n):
                ret = ret + gamma ** i * r[:, i:i + T]
                steps = steps + v[:, i:i + T]
                done = torch.maximum(done, d[:, i:i + T])
            boot = q_next.gather(2, q_online.argmax(2, keepdim=True)).squeeze(2)
            boot = h_inv(boot.gather(1, torch.arange(T) + steps.long()))
            y = h(ret + gamma ** steps * (1.0 - done) * boot)
        q = q_online[:, :-1].gather(2, b["action"][:, burn:].long().unsqueeze(2)).squeeze(2)
        per_seq = (F.mse_loss(q, y, reduction="none") * valid).sum(1) / valid.sum(1).clamp(min=1)
        loss = (per_seq * b["weight"]).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(params, c.grad_clip)
        opt.step()
        step[0] += 1
        if step[0] % c.target_update_freq == 0:
            target.load_state_dict(online.state_dict())
        ((q.detach() - y) * valid).abs().numpy()  # the priorities the buffer gets back
        return loss.item()

    return Case(policy, batch, update, [opt])


MAPPO_ROWS, MAPPO_AGENTS = 200, 3  # one rollout of 8 envs × 25 steps of simple_spread
MAPPO_OBS, MAPPO_ACT = gym.spaces.Box(-np.inf, np.inf, (18,), np.float32), gym.spaces.Discrete(5)
MAPPO_STATE = gym.spaces.Box(-np.inf, np.inf, (54,), np.float32)


def bare_mappo() -> Case:
    """MAPPO: one learn call is 10 epochs over a rollout of 200 env rows × 3 agents (one
    minibatch, shuffled), agents sharing an actor and a critic (64-64 ReLU) with a one-hot
    agent id; the critic reads the global state; 5% of agent rows absent (they weigh 0 in every
    mean). ValueNorm (running mean/std of the returns), clipped Huber (δ 10) value loss on
    normalised values, advantages normalised with the population std, entropy 0.01, actor and
    critic gradient norms clipped to 10 separately, one Adam with a group for each."""
    policy = get_policy("mappo")({"seed": 0}, MAPPO_OBS, MAPPO_ACT, n_agents=MAPPO_AGENTS,
                                  state_space=MAPPO_STATE)
    c, hidden = policy.cfg.learn, list(policy.cfg.model.hidden)
    n, A = MAPPO_ROWS, MAPPO_AGENTS
    rng = np.random.default_rng(0)
    batch = {"obs": rng.normal(size=(n, A, 18)).astype(np.float32),
             "global_state": rng.normal(size=(n, 54)).astype(np.float32),
             "action": rng.integers(5, size=(n, A)), "agent_mask": rng.random((n, A)) > 0.05,
             "logp": np.full((n, A), math.log(0.2), np.float32),
             "value": rng.normal(size=(n, A)).astype(np.float32),
             "adv": rng.normal(size=(n, A)).astype(np.float32),
             "return": rng.normal(size=(n, A)).astype(np.float32)}
    actor, critic = mlp([18 + A, *hidden, 5]), mlp([54 + A, *hidden, 1])
    actor_params, critic_params = list(actor.parameters()), list(critic.parameters())
    opt = torch.optim.Adam([{"params": actor_params, "lr": c.lr},
                            {"params": critic_params, "lr": c.critic_lr}], eps=1e-5, fused=True)
    ids = torch.eye(A).expand(n, A, A)
    stats = {"mean": torch.zeros((), dtype=torch.float64),
             "var": torch.ones((), dtype=torch.float64),
             "count": torch.tensor(1e-8, dtype=torch.float64)}
    gen = torch.Generator().manual_seed(1)

    def update() -> float:
        b = {k: torch.from_numpy(v) for k, v in batch.items()}
        w = b.pop("agent_mask")
        for k in ("obs", "action", "logp", "value", "adv", "return"):  # absent agents: zeros
            b[k] = torch.where(w.reshape(w.shape + (1,) * (b[k].dim() - 2)), b[k], 0)
        ret = b["return"][w].double()  # ValueNorm: Chan's running mean and variance update
        total = stats["count"] + ret.numel()
        delta = ret.mean() - stats["mean"]
        stats["mean"] += delta * ret.numel() / total
        stats["var"] = (stats["var"] * stats["count"] + ret.var(unbiased=False) * ret.numel()
                        + delta ** 2 * stats["count"] * ret.numel() / total) / total
        stats["count"] = total
        mean, std = stats["mean"].float(), torch.sqrt(stats["var"] + 1e-8).float()
        actor_in = torch.cat([b["obs"], ids], -1)
        critic_in = torch.cat([b["global_state"].unsqueeze(1).expand(-1, A, -1), ids], -1)
        ret_n, old_n = (b["return"] - mean) / std, (b["value"] - mean) / std
        for _ in range(c.epoch_per_collect):
            idx = torch.randperm(n, generator=gen)  # one minibatch of all env rows
            m = w[idx].reshape(-1)
            k = m.sum()
            dist = Categorical(logits=actor(actor_in[idx]).reshape(-1, 5), validate_args=False)
            value = critic(critic_in[idx]).reshape(-1)
            ratio = torch.where(m, dist.log_prob(b["action"][idx].reshape(-1))
                                - b["logp"][idx].reshape(-1), 0.0).exp()
            adv = b["adv"][idx].reshape(-1)
            adv_mean = (adv * m).sum() / k
            adv = (adv - adv_mean) / (((adv - adv_mean) ** 2 * m).sum() / k).sqrt().add(1e-8)
            policy_loss = (torch.max(-adv * ratio, -adv * ratio.clamp(
                1 - c.clip_ratio, 1 + c.clip_ratio)) * m).sum() / k
            target, old = ret_n[idx].reshape(-1), old_n[idx].reshape(-1)
            clipped = old + (value - old).clamp(-c.value_clip, c.value_clip)
            value_loss = (torch.max(F.huber_loss(value, target, reduction="none",
                                                 delta=c.huber_delta),
                                    F.huber_loss(clipped, target, reduction="none",
                                                 delta=c.huber_delta)) * m).sum() / k
            entropy = (dist.entropy() * m).sum() / k
            loss = policy_loss + c.value_coef * value_loss - c.entropy_coef * entropy
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(actor_params, c.grad_clip)
            nn.utils.clip_grad_norm_(critic_params, c.grad_clip)
            opt.step()
        return loss.item()

    return Case(policy, batch, update, [opt])


BUILDERS = {"dqn": bare_dqn, "sac": bare_sac, "td3": bare_td3, "bc": bare_bc,
            "iql": bare_iql, "td3-bc": bare_td3_bc, "cql": bare_cql, "ppo": bare_ppo,
            "ppo-lstm": bare_ppo_lstm, "r2d2": bare_r2d2, "mappo": bare_mappo}


def cpu_ms(fn: Callable[[], object], n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) * 1e3 / n


def measure(name: str, rounds: int, updates: int | None, round_ms: float) -> Tuple[float, float]:
    """(rlpipe CPU ms per update, bare CPU ms per update): medians over rounds. Each side runs
    `updates` updates per round, or (None) as many as fill about `round_ms` of CPU time."""
    policy, batch, bare, _ = BUILDERS[name]()
    learn = lambda: policy.learn_mode.forward(batch)  # noqa: E731
    for _ in range(3):  # warm-up: allocator, optimizer state, lazy inits
        learn()
        bare()
    if updates is None:
        updates = int(min(1000, max(3, round_ms / cpu_ms(learn, 3))))
    ours: List[float] = []
    theirs: List[float] = []
    for r in range(rounds):
        if r % 2 == 0:
            ours.append(cpu_ms(learn, updates))
            theirs.append(cpu_ms(bare, updates))
        else:
            theirs.append(cpu_ms(bare, updates))
            ours.append(cpu_ms(learn, updates))
    return statistics.median(ours), statistics.median(theirs)


def main(argv: List[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--algos", nargs="+", default=list(BUILDERS), choices=list(BUILDERS))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--updates", type=int, default=None,
                    help="updates per side per round (default: about --round-ms of CPU time)")
    ap.add_argument("--round-ms", type=float, default=1000.0,
                    help="CPU ms per side per round when --updates is not given")
    ap.add_argument("--quick", action="store_true", help="dqn and bc, 2 rounds of 5 updates")
    args = ap.parse_args(argv)
    if args.quick:
        args.algos, args.rounds, args.updates = ["dqn", "bc"], 2, 5
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print(f"{'algorithm':<10} {'rlpipe ms':>10} {'bare ms':>10} {'ratio':>7}")
    for name in args.algos:
        ours, bare = measure(name, args.rounds, args.updates, args.round_ms)
        print(f"{name:<10} {ours:>10.3f} {bare:>10.3f} {ours / bare:>7.2f}", flush=True)


if __name__ == "__main__":
    main()
