"""Conservative Q-Learning for continuous actions (Kumar et al. 2020, "Conservative Q-Learning for
Offline Reinforcement Learning"): CQL(H) with importance sampling, on top of SAC.

SAC's update (sac.py: twin critics, squashed Gaussian actor, automatic entropy tuning) with a
conservative term added to each critic's loss:

  gap_i  = mean_s [ T · logsumexp_j ((Q_i(s, a_j) − log μ(a_j)) / T)  −  Q_i(s, a_data) ],
  loss_Q += α_cql · Σ_i gap_i,

the logsumexp estimating log ∫ exp Q_i(s, a) da by importance sampling from 3n actions per state
(the paper's appendix; log μ detached):
  n uniform in [−1, 1]^A   log μ = log 0.5^A  (the density of the uniform box),
  n from π(·|s)            log μ = log π(a|s),
  n from π(·|s')           log μ = log π(a|s'),
all valued by Q_i at s. The term lowers Q where π or chance puts actions and raises it on the
data's actions, so the actor, which climbs Q, stays near the data.

Lagrange variant (learn.lagrange_threshold = τ, paper eq. 5): the weight becomes α' · α_cql,
  loss_Q += α' · α_cql · Σ_i (gap_i − τ),   α' = clip(exp(log α'), 0, 1e6),
  loss_α' = −α' · α_cql · mean_i (gap_i − τ)      (its own Adam),
so α' grows while the gap exceeds τ and shrinks while it is below: the gap is held near τ.

Actor: SAC's, mean (α log π(ã|s) − min_i Q_i(s, ã)); for the first learn.bc_steps updates
behaviour cloning instead, mean (α log π(ã|s) − log π(a_data|s)) (the authors' warm start).

Target (learn.max_q_backup, learn.backup_entropy):
  y = r + discount · min_i max_k Q_target_i(s', a'_k),  a'_k ~ π(s'), k = 1..n   (max backup),
  y = r + discount · min_i Q_target_i(s', a'),          a' ~ π(s')              (default),
  y = SAC's soft target (the entropy bonus −α log π(a'|s') included)            (backup_entropy).
Acting is SAC's, so the same policy can be fine-tuned online by the off-policy pipeline.
"""
from __future__ import annotations

import copy
import math
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

import gymnasium as gym
import torch
from torch import nn

from rlpipe.schema import extend, key

from ._common import adam, td_discount
from .sac import SACPolicy

__all__ = ["CQLPolicy", "importance_logsumexp"]

ALPHA_PRIME_MAX = 1e6  # the Lagrange multiplier α' is clipped to [0, 1e6] (the authors' code)


def importance_logsumexp(q: torch.Tensor, log_density: torch.Tensor,
                         temperature: float = 1.0) -> torch.Tensor:
    """T · logsumexp_j ((q_j − log μ_j) / T) over the last axis: the importance-sampled estimate
    of log ∫ exp Q(s, a) da from actions a_j ~ μ (q, log_density: [B, m] → [B])."""
    return temperature * torch.logsumexp((q - log_density) / temperature, dim=-1)


def _repeat(obs: Any, n: int) -> Any:
    """Each row of a batch of observations (a tensor or a dict of them) repeated n times in a
    row: [B, ...] → [B·n, ...]."""
    if isinstance(obs, Mapping):
        return {k: _repeat(v, n) for k, v in obs.items()}
    return obs.repeat_interleave(n, dim=0)


class CQLPolicy(SACPolicy):
    """CQL(H) for 1-D Box actions: SAC plus the conservative penalty on its twin critics."""

    pipeline = "offline"  # trained from a data set; the off-policy pipeline can fine-tune it
    space_hint = "CQL needs continuous (Box) actions; for Discrete ones use discrete-cql."
    _ALGO = "CQL"
    _STATE_KEYS = SACPolicy._STATE_KEYS + ("log_alpha_prime", "alpha_prime_optimizer")

    @classmethod
    def config_keys(cls) -> Dict[str, Any]:
        # Kumar et al. 2020, appendix F and the authors' code for the Gym-MuJoCo tasks: 3 × 256
        # networks, actor lr 1e-4, critic lr 3e-4, 10 sampled actions, α = 5 (τ = 5 or 10 where
        # they use the Lagrange variant, AntMaze and Adroit).
        return extend(super().config_keys(), dict(
            model=dict(
                actor_hidden=key((256, 256, 256), "actor MLP layers (the paper's 3 × 256)"),
                critic_hidden=key((256, 256, 256), "each Q network's MLP layers (3 × 256)"),
            ),
            learn=dict(
                actor_lr=key(1e-4, "Adam learning rate of the actor (paper: 1e-4 or 3e-5)"),
                alpha_lr=key(1e-4, "Adam learning rate of log α (as the actor's)"),
                cql_alpha=key(5.0, "α_cql, weight of the conservative gap (paper, Gym-MuJoCo)"),
                cql_n_actions=key(10, "n: actions drawn per state from each of the 3 samplers"),
                cql_temperature=key(1.0, "T of the logsumexp over the 3n sampled actions"),
                lagrange_threshold=key(None, "τ: learn α' to hold the gap near τ (None: fixed "
                                       "α_cql)"),
                alpha_prime_lr=key(3e-4, "Adam learning rate of log α' (the Lagrange variant)"),
                init_alpha_prime=key(1.0, "initial Lagrange multiplier α'"),
                max_q_backup=key(False, "target: max over n actions of π(s') of each target Q"),
                backup_entropy=key(False, "target keeps SAC's −α log π(a'|s') (authors' code: no)"),
                bc_steps=key(0, "first N learn steps: the actor clones the data's actions"),
            ),
        ))

    def __init__(self, cfg: Mapping | None, obs_space: Optional[gym.Space] = None,
                 action_space: Optional[gym.Space] = None, *,
                 model: Optional[nn.Module] = None,
                 enable_field: Optional[Sequence[str] | str] = None) -> None:
        """As SACPolicy's: `(cfg, obs_space, action_space)`, or DI-engine's `(cfg, model=...)`
        with a `ContinuousQAC(..., kind="reparameterization")` whose networks it trains."""
        super().__init__(cfg, obs_space, action_space, model=model, enable_field=enable_field)
        learn = self.cfg.learn
        self.log_alpha_prime = torch.tensor(math.log(learn.init_alpha_prime), device=self.device,
                                            requires_grad=True)
        self.alpha_prime_optimizer = adam([self.log_alpha_prime], learn.alpha_prime_lr,
                                          self.device)

    def _check_cfg(self) -> None:
        super()._check_cfg()
        learn = self.cfg.learn
        checks = (("cql_alpha", learn.cql_alpha is not None and learn.cql_alpha >= 0, ">= 0"),
                  ("cql_n_actions", learn.cql_n_actions is not None and learn.cql_n_actions >= 1,
                   ">= 1"),
                  ("bc_steps", learn.bc_steps is not None and learn.bc_steps >= 0, ">= 0"),
                  ("cql_temperature", learn.cql_temperature is not None
                   and learn.cql_temperature > 0, "> 0"),
                  ("alpha_prime_lr", learn.alpha_prime_lr is not None
                   and learn.alpha_prime_lr > 0, "> 0"),
                  ("init_alpha_prime", learn.init_alpha_prime is not None
                   and 0 < learn.init_alpha_prime <= ALPHA_PRIME_MAX, f"in (0, {ALPHA_PRIME_MAX:g}]"))
        for key, ok, need in checks:
            if not ok:
                raise ValueError(f"policy.learn.{key} must be {need}, got {learn[key]!r}.")

    @property
    def alpha_prime(self) -> float:
        """The Lagrange multiplier α' (used only when learn.lagrange_threshold is set)."""
        return float(self._alpha_prime().detach())

    def _alpha_prime(self) -> torch.Tensor:
        return self.log_alpha_prime.exp().clamp(0.0, ALPHA_PRIME_MAX)

    # --- the conservative penalty ----------------------------------------------------------------
    def _critic_noise(self, rows: int) -> Dict[str, torch.Tensor]:
        """The draws of the critics' update, in the order they are used: ε of the target's
        a' ~ π(s') (n per state with max_q_backup), then the uniform box samples and ε of the
        π(·|s) and π(·|s') samples of the penalty, n per state each."""
        c = self.cfg.learn
        n, dim = c.cql_n_actions, self.box.dim
        if c.backup_entropy and not c.max_q_backup:
            noise = super()._critic_noise(rows)  # SAC's soft target
        else:
            noise = {"target": self._normal(rows * (n if c.max_q_backup else 1))}
        noise["uniform"] = torch.rand((rows, n, dim), generator=self._learn_rng,
                                      device=self.device)
        noise["current"] = self._normal(rows * n)
        noise["following"] = self._normal(rows * n)
        return noise

    @torch.no_grad()
    def _cql_actions(self, obs: Any, next_obs: Any, rows: int,
                     noise: Dict[str, torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
        """The 3n importance samples per state: actions [B, 3n, A] in [-1, 1] and their
        log-densities [B, 3n] (uniform box, π(·|s), π(·|s'))."""
        n, dim = self.cfg.learn.cql_n_actions, self.box.dim
        uniform = noise["uniform"] * 2 - 1
        uniform_logp = torch.full((rows, n), dim * math.log(0.5), device=self.device)
        current, current_logp = self.actor.sample(obs, noise=noise["current"], repeats=n)
        following, following_logp = self.actor.sample(next_obs, noise=noise["following"],
                                                      repeats=n)
        actions = torch.cat([uniform, current.view(rows, n, dim), following.view(rows, n, dim)], 1)
        log_density = torch.cat([uniform_logp, current_logp.view(rows, n),
                                 following_logp.view(rows, n)], 1)
        return actions, log_density

    def _regulariser(self, b: Mapping[str, torch.Tensor], action: torch.Tensor,
                     noise: Dict[str, torch.Tensor]
                     ) -> Tuple[Optional[torch.Tensor], Optional[torch.Tensor],
                                Dict[str, torch.Tensor]]:
        c = self.cfg.learn
        rows = action.shape[0]
        actions, log_density = self._cql_actions(b["obs"], b["next_obs"], rows, noise)
        m = actions.shape[1]
        q_sampled = self.critic(_repeat(b["obs"], m), actions.view(rows * m, -1))
        q_data = self.critic(b["obs"], action)
        gaps = torch.stack([(importance_logsumexp(qs.view(rows, m), log_density,
                                                  c.cql_temperature) - qd).mean()
                            for qs, qd in zip(q_sampled, q_data)])  # [2]: one per critic
        stats = {"cql_gap": gaps.detach().mean()}
        if c.lagrange_threshold is None:
            return c.cql_alpha * gaps.sum(), None, stats

        # Lagrange: α' ascends on the gap's excess over τ (its own loss, stepped beside the
        # critics'); the critics' term is weighted by α' before that step.
        excess = c.cql_alpha * (gaps - c.lagrange_threshold)
        alpha_prime_loss = -(self._alpha_prime() * excess.detach()).mean()
        alpha_prime = self._alpha_prime().detach()
        stats.update(alpha_prime=alpha_prime, alpha_prime_loss=alpha_prime_loss.detach())
        return alpha_prime * excess.sum(), alpha_prime_loss, stats

    def _regulariser_stats(self) -> Tuple[str, ...]:
        if self.cfg.learn.lagrange_threshold is None:
            return ("cql_gap",)
        return ("cql_gap", "alpha_prime", "alpha_prime_loss")

    def _regulariser_optimizers(self) -> Tuple[torch.optim.Optimizer, ...]:
        return (self.alpha_prime_optimizer,)

    # --- the actor: SAC's, after an optional behaviour-cloning start ------------------------------
    def _warm_start(self) -> bool:
        return self.train_iter < self.cfg.learn.bc_steps

    def _actor_loss(self, b: Mapping[str, torch.Tensor], action: torch.Tensor,
                    new_action: torch.Tensor, logp: torch.Tensor,
                    alpha: torch.Tensor, warm_start: bool) -> torch.Tensor:
        """For the first learn.bc_steps steps (`warm_start`) mean (α log π(ã|s) −
        log π(a_data|s)) (the authors' code's warm start, `policy_eval_start`), then SAC's."""
        if warm_start:
            return (alpha * logp - self.actor.log_prob(b["obs"], action)).mean()
        return super()._actor_loss(b, action, new_action, logp, alpha, warm_start)

    # --- the target ------------------------------------------------------------------------------
    @torch.no_grad()
    def _td_target(self, b: Mapping[str, torch.Tensor], noise: torch.Tensor) -> torch.Tensor:
        c = self.cfg.learn
        if c.backup_entropy and not c.max_q_backup:
            return super()._td_target(b, noise)  # SAC's soft target
        n = c.cql_n_actions if c.max_q_backup else 1
        rows = b["reward"].shape[0]
        next_action, _ = self.actor.sample(b["next_obs"], noise=noise, repeats=n)
        q1, q2 = self.critic_target(_repeat(b["next_obs"], n), next_action)
        next_value = torch.min(q1.view(rows, n).max(1).values, q2.view(rows, n).max(1).values)
        return b["reward"].float() + td_discount(b, c.gamma) * next_value

    # --- state -----------------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        state = super().state_dict()
        with self._lock:
            state["log_alpha_prime"] = self.log_alpha_prime.detach().clone()
            state["alpha_prime_optimizer"] = copy.deepcopy(self.alpha_prime_optimizer.state_dict())
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        super().load_state_dict(state)  # checks every key of _STATE_KEYS, ours included
        with self._lock, torch.no_grad():
            self.log_alpha_prime.copy_(state["log_alpha_prime"])
            self.alpha_prime_optimizer.load_state_dict(state["alpha_prime_optimizer"])
