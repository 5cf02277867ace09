"""Soft Actor-Critic (Haarnoja et al. 2018, with the automatic temperature of the 2018 "SAC
algorithms and applications" paper) for continuous Box actions.

Networks:
  actor          — squashed Gaussian π(a|s), a = tanh(u), u ~ N(mean(s), std(s)), trained here;
  acting         — the collector's copy of the actor; refresh() copies actor into it, so acting
                   never reads weights that the learner is writing (async mode);
  critic         — twin Q networks Q1, Q2;
  critic_target  — Polyak average of critic (tau every learn step).
Actors work in [-1, 1]^A; actions are scaled onto the env's Box bounds when acting, and batch
actions are scaled back to [-1, 1] before they reach the critics.

One learn step on a batch (obs, action, reward, next_obs, terminated):
  y = reward + discount · (min_i Q_target_i(next_obs, a') − α log π(a'|next_obs)),  a' ~ π(next_obs)
  discount = batch["discount"] (n-step) or gamma · (1 − terminated)   — truncation bootstraps;
  critic loss  = Σ_i mean (Q_i(obs, action) − y)²;
  actor loss   = mean (α log π(ã|obs) − min_i Q_i(obs, ã)),  ã ~ π(obs) (reparameterised);
  α loss       = −mean log α · (log π(ã|obs) + target_entropy),  target_entropy = −|A| by default.
"""
from __future__ import annotations

import copy
import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from rlpipe.models import SquashedGaussianActor, obs_as_tensor
from rlpipe.schema import key

from ._common import (adam, adam_step, compile_learn, grad_step, joint_grad_step,
                      td_discount)
from ._continuous import CONTINUOUS_HINT, polyak, reject_collect_kwargs
from ._twin_critic import TwinCriticPolicy

__all__ = ["SACPolicy"]


class SACPolicy(TwinCriticPolicy):
    """Soft Actor-Critic for 1-D Box action spaces with finite bounds."""

    space_hint = "SAC needs continuous (Box) actions. " + CONTINUOUS_HINT
    _ALGO = "SAC"
    _STATE_KEYS = ("log_alpha", "alpha_optimizer", "last_actor_stats")

    @classmethod
    def config_keys(cls) -> Dict[str, Any]:
        return dict(
            device=key("cpu", 'learner device: "cpu", "cuda" or "auto"'),
            seed=key(None, "seeds init and action noise (None: from torch's global RNG)"),
            model=dict(
                actor_hidden=key((256, 256), "actor MLP layers"),
                critic_hidden=key((256, 256), "each Q network's MLP layers (input: obs ⊕ action)"),
                encoders=key({}, 'per Dict key encoder kind, e.g. {"image": "mlp"}'),
                log_std_min=key(-5.0, "the actor's log std is squashed into [min, max]"),
                log_std_max=key(2.0, "(the max of that range)"),
            ),
            learn=dict(
                batch_size=key(256, "rows per learn step (read by the learner middleware)"),
                gamma=key(0.99, "discount per env step"),
                tau=key(0.005, "Polyak rate of the target critics, every learn step"),
                actor_lr=key(3e-4, "Adam learning rate of the actor"),
                critic_lr=key(3e-4, "Adam learning rate of the twin critics"),
                alpha_lr=key(3e-4, "Adam learning rate of log α (auto_alpha)"),
                init_alpha=key(1.0, "initial entropy temperature α"),
                auto_alpha=key(True, "tune α so the policy entropy tracks target_entropy"),
                target_entropy=key(None, "None: −(action dimensions)"),
                actor_update_freq=key(1, "update actor and α every N learn steps"),
                grad_clip=key(None, "max global grad norm per network (None: no clipping)"),
                compile=key(False, "run the losses and their backward through torch.compile "
                                   "(compiled at the first learn step)"),
            ),
            collect=dict(
                device=key("cpu", "where the acting copy of the actor lives"),
            ),
        )

    actor_class = SquashedGaussianActor

    def __init__(self, cfg: Mapping | None, obs_space: Optional[gym.Space] = None,
                 action_space: Optional[gym.Space] = None, *,
                 model: Optional[nn.Module] = None,
                 enable_field: Optional[Sequence[str] | str] = None) -> None:
        # actor, twin critics, target, acting copy
        super().__init__(cfg, obs_space, action_space, model=model, enable_field=enable_field)
        learn = self.cfg.learn
        self.log_alpha = torch.tensor(math.log(learn.init_alpha), device=self.device,
                                      requires_grad=True)
        self.target_entropy = (-float(self.box.dim) if learn.target_entropy is None
                               else float(learn.target_entropy))
        self.alpha_optimizer = adam([self.log_alpha], learn.alpha_lr, self.device)
        self._critic_target_params = list(self.critic_target.parameters())
        self._last_actor_stats = dict(actor_loss=0.0, alpha_loss=0.0, entropy=0.0)
        who, compile_ = type(self).__name__, learn.compile
        self._critic_step = compile_learn(self._critic_losses, compile_, who)
        self._actor_step = compile_learn(self._actor_losses, compile_, who)

    def _make_actor(self, obs_space: gym.Space) -> nn.Module:
        m = self.cfg.model
        return SquashedGaussianActor(obs_space, self.box.dim, m.actor_hidden, m.log_std_min,
                                     m.log_std_max, encoders=m.encoders)

    def _check_cfg(self) -> None:
        super()._check_cfg(("alpha_lr", "init_alpha", "actor_update_freq"))
        learn = self.cfg.learn
        if learn.init_alpha <= 0.0:
            raise ValueError(f"policy.learn.init_alpha must be > 0, got {learn.init_alpha}.")
        if learn.actor_update_freq < 1:
            raise ValueError("policy.learn.actor_update_freq must be >= 1, "
                             f"got {learn.actor_update_freq}.")

    @property
    def alpha(self) -> float:
        """The current entropy temperature α."""
        return float(self.log_alpha.detach().exp())

    # --- collect: sample from the acting copy; eval: tanh(mean) of the learner's actor ----------
    def _forward_collect(self, obs: Any, deterministic: bool = False,
                         **unknown: Any) -> Dict[str, np.ndarray]:
        """`deterministic=True`: tanh(mean) instead of a sample."""
        reject_collect_kwargs("SACPolicy", unknown, "obs and deterministic=False")
        obs_t = obs_as_tensor(obs, self.collect_device)
        with torch.inference_mode():
            if deterministic:
                unit = self.acting.deterministic(obs_t)
            else:
                unit = self.acting.sample(obs_t, self._collect_rng)[0]
        return {"action": self.box.to_env(unit.cpu().numpy())}

    def _greedy(self, actor: nn.Module, obs: torch.Tensor) -> torch.Tensor:
        return actor.deterministic(obs)

    # --- learn -----------------------------------------------------------------------------------
    # The RNG draws of a step are made before the losses that use them, in the order the losses
    # use them, so that the loss functions hold no RNG state (and can be compiled).
    def _critic_noise(self, rows: int) -> Dict[str, torch.Tensor]:
        """The draws of the critics' update: ε of a' ~ π(s') for the target."""
        return {"target": self._normal(rows)}

    def _normal(self, rows: int) -> torch.Tensor:
        """N(0, 1) draws [rows, A] from the learner's RNG."""
        return torch.randn((rows, self.box.dim), generator=self._learn_rng, device=self.device)

    @torch.no_grad()
    def _td_target(self, b: Mapping[str, torch.Tensor], noise: torch.Tensor) -> torch.Tensor:
        """y = r + discount · (min_i Q_target_i(s', a') − α log π(a'|s')),  a' ~ π(s') drawn
        with ε = `noise`."""
        next_action, next_logp = self.actor.sample(b["next_obs"], noise=noise)
        next_q = torch.min(*self.critic_target(b["next_obs"], next_action))
        next_value = next_q - self.log_alpha.exp() * next_logp
        discount = td_discount(b, self.cfg.learn.gamma)
        return b["reward"].float() + discount * next_value

    def _critic_losses(self, b: Mapping[str, torch.Tensor], action: torch.Tensor,
                       noise: Dict[str, torch.Tensor]
                       ) -> Tuple[torch.Tensor, Optional[torch.Tensor], torch.Tensor]:
        """The critics' loss (with the regulariser's term), the loss of the regulariser's own
        parameters (None: it has none) and the statistics [critic_loss, q_mean, target_mean,
        then the regulariser's]."""
        y = self._td_target(b, noise["target"])
        critic_loss, q1 = self._critic_loss(b["obs"], action, y)
        term, own_loss, extra_stats = self._regulariser(b, action, noise)
        if term is not None:
            critic_loss = critic_loss + term
        stats = [critic_loss.detach(), q1.detach().mean(), y.mean(), *extra_stats.values()]
        return critic_loss, own_loss, torch.stack(stats)

    def _actor_losses(self, b: Mapping[str, torch.Tensor], action: torch.Tensor,
                      noise: torch.Tensor, warm_start: bool
                      ) -> Tuple[torch.Tensor, Optional[torch.Tensor], torch.Tensor]:
        """The actor's loss, the temperature's (None without auto_alpha) and the statistics
        [actor_loss, entropy, alpha_loss (with auto_alpha)]; ã ~ π(s) drawn with ε = `noise`."""
        new_action, logp = self.actor.sample(b["obs"], noise=noise)
        alpha = self.log_alpha.detach().exp()
        actor_loss = self._actor_loss(b, action, new_action, logp, alpha, warm_start)
        stats = [actor_loss.detach(), -logp.detach().mean()]
        alpha_loss = None
        if self.cfg.learn.auto_alpha:
            # α grows while the entropy is below its target and shrinks while above it.
            alpha_loss = -(self.log_alpha * (logp.detach() + self.target_entropy)).mean()
            stats.append(alpha_loss.detach())
        return actor_loss, alpha_loss, torch.stack(stats)

    def _forward_learn(self, batch: Mapping[str, Any]) -> Dict[str, Any]:
        c = self.cfg.learn
        b, action = self._learn_batch(batch)
        rows = action.shape[0]

        # Critics: regress both Q's on the soft TD target (and the regulariser's parameters,
        # which share none with them, from the same backward pass).
        critic_loss, own_loss, stats = self._critic_step(b, action, self._critic_noise(rows))
        if own_loss is None:
            grad_step(self.critic_optimizer, critic_loss, self._critic_params, c.grad_clip)
        else:
            joint_grad_step(critic_loss + own_loss,
                            (self.critic_optimizer, *self._regulariser_optimizers()),
                            (self._critic_params,), c.grad_clip)
        with self._lock:
            adam_step(self.critic_optimizer)
            if own_loss is not None:
                for optimizer in self._regulariser_optimizers():
                    adam_step(optimizer)
        values = [stats]

        # Actor and temperature, every actor_update_freq learn steps (log α takes no gradient
        # from the actor's loss, nor the actor from α's: one backward pass serves both).
        actor_step = self.train_iter % c.actor_update_freq == 0
        if actor_step:
            noise = self._normal(rows)
            with self._critics_frozen():  # the actor's loss needs dQ/da only
                actor_loss, alpha_loss, actor_stats = self._actor_step(b, action, noise,
                                                                       self._warm_start())
            if alpha_loss is None:
                grad_step(self.actor_optimizer, actor_loss, self._actor_params, c.grad_clip)
            else:
                joint_grad_step(actor_loss + alpha_loss,
                                (self.actor_optimizer, self.alpha_optimizer),
                                (self._actor_params,), c.grad_clip)
            with self._lock:
                adam_step(self.actor_optimizer)
                if alpha_loss is not None:
                    adam_step(self.alpha_optimizer)
            values.append(actor_stats)

        # Target critics: Polyak-average toward the critics, every learn step.
        with self._lock:
            polyak(self._critic_target_params, self._critic_params, c.tau)
            self.train_iter += 1

        # one read of the device for every statistic of the step
        values.append(self.log_alpha.detach().exp().view(1))
        flat = torch.cat(values).tolist()
        critic = dict(zip(("critic_loss", "q_mean", "target_mean") + self._regulariser_stats(),
                          flat))
        if actor_step:
            names = ("actor_loss", "entropy") + (("alpha_loss",) if c.auto_alpha else ())
            self._last_actor_stats.update(zip(names, flat[len(critic):-1]))
        out = {k: critic.pop(k) for k in ("critic_loss", "q_mean", "target_mean")}
        out.update(self._last_actor_stats, alpha=flat[-1])
        out.update(critic)  # the regulariser's
        return out

    def monitor_vars(self) -> List[str]:
        """The statistics of `_forward_learn`: the critics', the latest actor update's, α and
        the regulariser's (CQL's, by its settings)."""
        return ["critic_loss", "q_mean", "target_mean", *self._last_actor_stats, "alpha",
                *self._regulariser_stats()]

    def _warm_start(self) -> bool:
        """Whether this step's actor loss is a variant's warm start (none in SAC)."""
        return False

    def _actor_loss(self, b: Mapping[str, torch.Tensor], action: torch.Tensor,
                    new_action: torch.Tensor, logp: torch.Tensor,
                    alpha: torch.Tensor, warm_start: bool) -> torch.Tensor:
        """mean (α log π(ã|s) − min_i Q_i(s, ã)), ã = `new_action` ~ π(s) with log π = `logp`
        (`action`: the batch's actions in [-1, 1]^A, and `warm_start`, for variants that clone
        them first). The caller has frozen the critics."""
        q_new = torch.min(*self.critic(b["obs"], new_action))
        return (alpha * logp - q_new).mean()

    def _regulariser(self, b: Mapping[str, torch.Tensor], action: torch.Tensor,
                     noise: Dict[str, torch.Tensor]
                     ) -> Tuple[Optional[torch.Tensor], Optional[torch.Tensor],
                                Dict[str, torch.Tensor]]:
        """A term added to the critics' loss, a loss of the regulariser's own parameters
        (stepped by `_regulariser_optimizers`) and its scalar statistics (detached, named by
        `_regulariser_stats`): none for SAC. Offline variants override it (CQL: the
        conservative penalty). `b` is the batch as tensors, `action` its actions in
        [-1, 1]^A, `noise` the draws of `_critic_noise`."""
        return None, None, {}

    def _regulariser_stats(self) -> Tuple[str, ...]:
        """The names of `_regulariser`'s statistics, in order."""
        return ()

    def _regulariser_optimizers(self) -> Tuple[torch.optim.Optimizer, ...]:
        """The optimizers of the regulariser's own parameters."""
        return ()

    # --- state -----------------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        with self._lock:
            return {
                **self._twin_state(),
                "log_alpha": self.log_alpha.detach().clone(),
                "alpha_optimizer": copy.deepcopy(self.alpha_optimizer.state_dict()),
                "last_actor_stats": dict(self._last_actor_stats),
            }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        with self._lock:
            self._load_twin_state(state)
            with torch.no_grad():
                self.log_alpha.copy_(state["log_alpha"])
            self.alpha_optimizer.load_state_dict(state["alpha_optimizer"])
            self._last_actor_stats = {k: float(v) for k, v in state["last_actor_stats"].items()}
