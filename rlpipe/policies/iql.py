"""IQL: Implicit Q-Learning (Kostrikov, Nair & Levine 2021, "Offline Reinforcement Learning with
Implicit Q-Learning") for continuous Box actions.

IQL never evaluates an action that is not in the data: V(s) is fitted as an upper expectile of
Q over the data's actions, Q backs up V(s'), and the actor is extracted by advantage-weighted
regression on the data's actions.

Networks:
  critic, critic_target  — twin Q networks Q1, Q2 and their Polyak average (tau every step);
  value                  — V(s);
  actor                  — Gaussian N(tanh(mean(s)), std) (model.actor="gaussian") or
                           deterministic μ(s) ("deterministic"), both in [-1, 1]^A;
  acting                 — the collector's copy of the actor (refresh() updates it).

One learn step on a batch (obs, action, reward, next_obs, terminated), in the paper's order:
  Q̂(s, a) = min_i Q_target_i(s, a)
  value loss  = mean L2^τ(Q̂(s, a) − V(s)),   L2^τ(u) = |τ − 1(u < 0)| · u²     (expectile τ)
  critic loss = Σ_i mean (Q_i(s, a) − y)²,   y = c·r + discount · V(s')        (V just updated)
      discount = batch["discount"] (n-step) or gamma · (1 − terminated) — truncation bootstraps
  actor loss  = −mean w · log π(a|s)  (Gaussian)  or  mean w · ‖μ(s) − a‖²  (deterministic),
      w = min(exp(β · (Q̂(s, a) − V(s))), max_weight)                              (AWR)
  critic_target ← Polyak(critic, tau).
The actor's learning rate may follow a cosine decay to 0 over `learn.actor_lr_cosine_steps`.
Rewards are scaled by c = 1 or, with `learn.reward_norm="return_range"`, the paper's Gym-MuJoCo
convention c = 1000 / (max − min episode return of the data set), which the offline pipeline
passes in through `set_return_range` (c is part of the state, so a resumed or fine-tuned run
keeps it).
Collecting (online fine-tuning) samples the Gaussian, or adds N(0, noise_scale) to μ(s).
Discrete actions are not implemented (use BC, or CQL for discrete data).
"""
from __future__ import annotations

import copy
import math
from typing import Any, Dict, Mapping, Tuple

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from rlpipe.models import DeterministicActor, GaussianActor, ValueNetwork, obs_as_tensor
from rlpipe.schema import key

from ._common import (adam, adam_step, clone_state, compile_learn, grad_step, joint_grad_step,
                      td_discount)
from ._continuous import CONTINUOUS_HINT, polyak, reject_collect_kwargs
from ._twin_critic import TwinCriticPolicy

__all__ = ["IQLPolicy"]

_ACTORS = ("gaussian", "deterministic")
_REWARD_NORMS = ("none", "return_range")


def expectile_loss(u: torch.Tensor, expectile: float) -> torch.Tensor:
    """mean |τ − 1(u < 0)| · u²: an asymmetric square that, minimised over V with u = Q − V,
    gives the τ-expectile of Q (τ > 0.5 leans towards the larger values)."""
    return (torch.abs(expectile - (u < 0).float()) * u.pow(2)).mean()


class IQLPolicy(TwinCriticPolicy):
    """Implicit Q-Learning for 1-D Box action spaces with finite bounds."""

    pipeline = "offline"
    space_hint = "IQL here needs continuous (Box) actions. " + CONTINUOUS_HINT
    _ALGO = "IQL"
    _STATE_KEYS = ("value", "value_optimizer", "last_stats")
    learn_stats = ("critic_loss", "q_mean", "target_mean", "value_loss", "v_mean", "actor_loss",
                   "adv_mean", "weight_mean")
    _REQUIRED_LEARN = TwinCriticPolicy._REQUIRED_LEARN + ("value_lr", "expectile", "beta",
                                                          "max_weight")

    @classmethod
    def config_keys(cls) -> Dict[str, Any]:
        # The paper's settings for the MuJoCo locomotion tasks (Sec. 5 and the experimental
        # details of its appendix): 256-256 MLPs, Adam 3e-4 for every network, batch 256,
        # gamma 0.99, target Polyak 0.005, expectile 0.7, inverse temperature 3.0, advantage
        # weights clipped at 100, a state-independent Gaussian std, a cosine actor lr schedule.
        return dict(
            device=key("cpu", 'learner device: "cpu", "cuda" or "auto"'),
            seed=key(None, "seeds init and all noise (None: from torch's global RNG)"),
            model=dict(
                actor=key("gaussian", '"gaussian" (log-likelihood AWR) or "deterministic"'),
                actor_hidden=key((256, 256), "actor MLP layers"),
                critic_hidden=key((256, 256), "each Q network's MLP layers (input: obs ⊕ action)"),
                value_hidden=key((256, 256), "V network's MLP layers"),
                encoders=key({}, 'per Dict key encoder kind, e.g. {"image": "mlp"}'),
                log_std_min=key(-5.0, "the Gaussian actor's log std is clamped to [min, max]"),
                log_std_max=key(2.0, "(the max of that range)"),
            ),
            learn=dict(
                batch_size=key(256, "rows per learn step (read by the learner middleware)"),
                gamma=key(0.99, "discount per env step"),
                tau=key(0.005, "Polyak rate of the target critics, every learn step"),
                actor_lr=key(3e-4, "Adam learning rate of the actor"),
                critic_lr=key(3e-4, "Adam learning rate of the twin critics"),
                value_lr=key(3e-4, "Adam learning rate of V"),
                expectile=key(0.7, "τ of V's expectile regression (0.5: the mean; → 1: the max)"),
                beta=key(3.0, "inverse temperature of the advantage weights exp(β·A)"),
                max_weight=key(100.0, "the advantage weights are clipped at this"),
                actor_lr_cosine_steps=key(None, "cosine decay of the actor lr to 0 over N steps"),
                reward_norm=key("none", '"return_range": rewards × 1000/(max − min episode return)'),
                grad_clip=key(None, "max global grad norm per network (None: no clipping)"),
                compile=key(False, "run the losses and their backward through torch.compile "
                                   "(compiled at the first learn step)"),
            ),
            collect=dict(
                device=key("cpu", "where the acting copy of the actor lives"),
                noise_scale=key(0.1, "deterministic actor: std of its Gaussian exploration noise"),
            ),
        )

    def __init__(self, cfg: Mapping | None, obs_space: gym.Space, action_space: gym.Space) -> None:
        super().__init__(cfg, obs_space, action_space)  # actor, twin critics, target, acting copy
        c = self.cfg
        with torch.random.fork_rng(devices=[]):
            if c.seed is not None:
                torch.manual_seed(c.seed + 2)
            self.value = ValueNetwork(obs_space, c.model.value_hidden,
                                      encoders=c.model.encoders).to(self.device)
        self._value_params = list(self.value.parameters())
        self.value_optimizer = adam(self._value_params, c.learn.value_lr, self.device)
        self._critic_target_params = list(self.critic_target.parameters())
        # c above; with "return_range", unknown until set_return_range
        self.reward_scale: float | None = None if c.learn.reward_norm == "return_range" else 1.0
        self._last_stats = dict(value_loss=0.0, v_mean=0.0, actor_loss=0.0, adv_mean=0.0,
                                weight_mean=0.0)
        self._value_step = compile_learn(self._value_loss, c.learn.compile, "IQLPolicy")
        self._critic_actor_step = compile_learn(self._critic_actor_loss, c.learn.compile,
                                                "IQLPolicy")

    def _make_actor(self, obs_space: gym.Space) -> nn.Module:
        m = self.cfg.model
        if m.actor == "gaussian":
            return GaussianActor(obs_space, self.box.dim, m.actor_hidden, m.log_std_min,
                                 m.log_std_max, encoders=m.encoders)
        return DeterministicActor(obs_space, self.box.dim, m.actor_hidden, encoders=m.encoders)

    def _check_cfg(self) -> None:
        super()._check_cfg(("value_lr", "expectile", "beta", "max_weight"))
        c = self.cfg
        if c.model.actor not in _ACTORS:
            raise ValueError(f"policy.model.actor must be one of {_ACTORS}, got {c.model.actor!r}.")
        if c.model.value_hidden is None:
            raise ValueError("policy.model.value_hidden must be a tuple of layer sizes (it is "
                             "None).")
        if not 0.0 < c.learn.expectile < 1.0:
            raise ValueError(f"policy.learn.expectile must be in (0, 1), got {c.learn.expectile}.")
        if c.learn.beta < 0 or c.learn.max_weight <= 0:
            raise ValueError("policy.learn.beta must be >= 0 and max_weight > 0, got "
                             f"{c.learn.beta} and {c.learn.max_weight}.")
        if c.learn.reward_norm not in _REWARD_NORMS:
            raise ValueError(f"policy.learn.reward_norm must be one of {_REWARD_NORMS}, got "
                             f"{c.learn.reward_norm!r}.")
        steps = c.learn.actor_lr_cosine_steps
        if steps is not None and steps < 1:
            raise ValueError("policy.learn.actor_lr_cosine_steps must be >= 1 or None, got "
                             f"{steps}.")

    def set_return_range(self, low: float, high: float) -> None:
        """The data set's lowest and highest episode return: with `learn.reward_norm=
        "return_range"`, rewards are scaled by 1000 / (high − low); otherwise nothing changes."""
        if self.cfg.learn.reward_norm != "return_range":
            return
        if not (math.isfinite(low) and math.isfinite(high) and high > low):
            raise ValueError(f"IQLPolicy.set_return_range: reward_norm='return_range' needs "
                             f"episode returns that differ, got min {low} and max {high}; set "
                             f"policy.learn.reward_norm=none for this data set.")
        self.reward_scale = 1000.0 / (high - low)

    @property
    def gaussian(self) -> bool:
        return self.cfg.model.actor == "gaussian"

    # --- collect: a draw of π (or μ + noise) from the acting copy; eval: the mean / μ ----------
    def _forward_collect(self, obs: Any, **unknown: Any) -> Dict[str, np.ndarray]:
        reject_collect_kwargs("IQLPolicy", unknown, "obs only")
        obs_t = obs_as_tensor(obs, self.collect_device)
        with torch.inference_mode():
            if self.gaussian:
                unit = self.acting.sample(obs_t, self._collect_rng)
            else:
                unit = self.acting(obs_t)
                noise = torch.randn(unit.shape, generator=self._collect_rng, device=unit.device)
                unit = (unit + self.cfg.collect.noise_scale * noise).clamp(-1.0, 1.0)
        return {"action": self.box.to_env(unit.cpu().numpy())}

    def _greedy(self, actor: nn.Module, obs: torch.Tensor) -> torch.Tensor:
        return actor.deterministic(obs) if self.gaussian else actor(obs)

    # --- learn -----------------------------------------------------------------------------------
    def _actor_lr(self) -> float:
        """The actor's lr at this step: constant, or the cosine decay lr·½(1 + cos(π t / T))."""
        c = self.cfg.learn
        if c.actor_lr_cosine_steps is None:
            return c.actor_lr
        t = min(self.train_iter, c.actor_lr_cosine_steps) / c.actor_lr_cosine_steps
        return c.actor_lr * 0.5 * (1.0 + math.cos(math.pi * t))

    def _value_loss(self, obs: torch.Tensor,
                    action: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """V's expectile loss against Q̂(s, a) = min_i Q_target_i(s, a), and Q̂."""
        with torch.no_grad():
            q_hat = torch.min(*self.critic_target(obs, action))
        return expectile_loss(q_hat - self.value(obs), self.cfg.learn.expectile), q_hat

    def _critic_actor_loss(self, b: Mapping[str, torch.Tensor], action: torch.Tensor,
                           q_hat: torch.Tensor
                           ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The critics' loss, the actor's loss and the step's statistics [7] (critic_loss,
        q_mean, target_mean, v_mean, actor_loss, adv_mean, weight_mean), with the V just
        updated."""
        c = self.cfg.learn
        obs = b["obs"]
        # Q: regress both critics on r + discount · V(s').
        with torch.no_grad():
            v = self.value(obs)
            bootstrap = td_discount(b, c.gamma) * self.value(b["next_obs"])
            y = self.reward_scale * b["reward"].float() + bootstrap
        critic_loss, q1 = self._critic_loss(obs, action, y)

        # Actor: advantage-weighted regression onto the data's actions.
        advantage = q_hat - v
        weight = torch.exp(c.beta * advantage).clamp(max=c.max_weight)
        if self.gaussian:
            actor_loss = -(weight * self.actor.log_prob(obs, action)).mean()
        else:
            actor_loss = (weight * (self.actor(obs) - action).pow(2).sum(-1)).mean()
        stats = torch.stack([critic_loss.detach(), q1.detach().mean(), y.mean(), v.mean(),
                             actor_loss.detach(), advantage.mean(), weight.mean()])
        return critic_loss, actor_loss, stats

    def _forward_learn(self, batch: Mapping[str, Any]) -> Dict[str, Any]:
        c = self.cfg.learn
        if self.reward_scale is None:
            raise RuntimeError("IQLPolicy: policy.learn.reward_norm='return_range' needs the data "
                               "set's episode return range before learning: the offline pipeline "
                               "passes it in; by hand, call policy.set_return_range(min, max).")
        b, action = self._learn_batch(batch)

        # V: expectile regression on the target critics' min over the data's actions.
        value_loss, q_hat = self._value_step(b["obs"], action)
        grad_step(self.value_optimizer, value_loss, self._value_params, c.grad_clip)
        with self._lock:
            adam_step(self.value_optimizer)

        # Q and the actor, from the V just updated: their networks share no parameter, so one
        # backward pass of the summed losses gives each its own gradient.
        critic_loss, actor_loss, stats = self._critic_actor_step(b, action, q_hat)
        joint_grad_step(critic_loss + actor_loss, (self.critic_optimizer, self.actor_optimizer),
                        (self._critic_params, self._actor_params), c.grad_clip)
        with self._lock:
            adam_step(self.critic_optimizer)
            for group in self.actor_optimizer.param_groups:
                group["lr"] = self._actor_lr()
            adam_step(self.actor_optimizer)
            polyak(self._critic_target_params, self._critic_params, c.tau)
            self.train_iter += 1

        # one read of the device for every statistic of the step
        values = dict(zip(("value_loss", "critic_loss", "q_mean", "target_mean", "v_mean",
                           "actor_loss", "adv_mean", "weight_mean"),
                          torch.cat([value_loss.detach().view(1), stats]).tolist()))
        self._last_stats = {k: values[k] for k in self._last_stats}
        out = {k: values[k] for k in ("critic_loss", "q_mean", "target_mean")}
        out.update(self._last_stats)
        return out

    # --- state -----------------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        with self._lock:
            return {
                **self._twin_state(),
                "value": clone_state(self.value),
                "value_optimizer": copy.deepcopy(self.value_optimizer.state_dict()),
                "last_stats": dict(self._last_stats),
                "reward_scale": self.reward_scale,
            }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        with self._lock:
            self._load_twin_state(state)
            self.value.load_state_dict(state["value"])
            self.value_optimizer.load_state_dict(state["value_optimizer"])
            self._last_stats = {k: float(v) for k, v in state["last_stats"].items()}
            # checkpoints from before reward_norm existed trained on unscaled rewards
            self.reward_scale = state.get("reward_scale", 1.0)
