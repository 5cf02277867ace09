"""R2D2 (Kapturowski et al. 2019): recurrent DQN learned on stored sequences.

The Q network is encoder → LSTM/GRU → (dueling) head (`RecurrentQNetwork`). Acting carries one
state per env (the pipeline's recurrent API); the replay buffer stores sequences of
`burn_in + seq_len` steps with the state at their start (`SequenceReplayBuffer`). One update:

  1. burn-in: from the stored start state, the online net is unrolled over the first `burn_in`
     steps WITHOUT gradient (the state is only warmed up), and so is the target net;
  2. the online net is unrolled over the learning part (with gradient), the target net on;
  3. n-step double-Q targets with value rescaling h (ε = 1e-3):
       y_t = h( Σ_{i<m} γ^i r_{t+i} + γ^m (1 − done) h⁻¹( Q_target(s_{t+m}, argmax_a Q_online(s_{t+m}, a)) ) )
     where m = min(n, steps left in the sequence) — a sequence's last steps look less far;
  4. loss: Huber (or squared) TD error, averaged over the valid (mask) steps of each sequence,
     weighted by the importance weights; per-sequence priorities are η·max + (1−η)·mean of |TD|
     (the buffer's `update_priority`, fed through the learner's priority write-back).
"""
from __future__ import annotations

import copy
import threading
from typing import Any, Dict, Mapping

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F

from rlpipe.models import RecurrentQNetwork, batch_rows, obs_as_tensor
from rlpipe.schema import count, key, non_negative, positive, unit

from ._common import (adam, check_learner_state, grad_step, hard_update, learner_state,
                      load_learner_state, numpy_rng, resolve_device, soft_update)
from ._masks import masked_argmax
from ._sequence_td import append_last_next, sequence_nstep_targets, time_slice
from .base import Policy

__all__ = ["R2D2Policy"]

_SEQ_KEYS = ("obs", "next_obs", "action", "reward", "terminated", "first", "mask", "state")
_MODULES = ("online", "target", "acting")  # the networks a checkpoint holds, as DQN's


class R2D2Policy(Policy):
    """Recurrent replay distributed DQN (one learner) for Discrete action spaces."""

    obs_space_types = (gym.spaces.Box, gym.spaces.Dict, gym.spaces.Tuple, gym.spaces.Discrete,
                       gym.spaces.MultiDiscrete)
    action_space_types = (gym.spaces.Discrete,)
    pipeline = "off-policy"  # the zoo's off-policy pipeline, with sequence replay (recurrent)
    explores_with_eps = True
    recurrent = True
    learn_stats = ("loss", "q_mean", "target_mean", "td_abs_mean", "grad_norm")
    space_hint = "R2D2 picks one of finitely many actions; for continuous control use SAC or PPO."

    @classmethod
    def config_keys(cls) -> Dict[str, Any]:
        # The paper's values (Kapturowski et al. 2019, Table 2) where it gives them.
        return dict(
            device=key("cpu", 'learner device: "cpu", "cuda" or "auto"'),
            seed=key(None, "seeds network init and exploration (None: fresh entropy)"),
            model=dict(
                hidden=key((256,), "encoder layers before the core (the paper: Atari conv torso)"),
                core_size=key(512, "LSTM width (Table 2: 512)", count(1, "LSTM width")),
                kind=key("lstm", '"lstm" (the paper) or "gru"'),
                dueling=key(True, "dueling head (the paper)"),
                encoders=key({}, "per Dict key encoder kind, as DQN's"),
            ),
            learn=dict(
                lr=key(1e-4, "Adam learning rate (Table 2: 1e-4)"),
                adam_eps=key(1e-3, "Adam epsilon (Table 2: 1e-3)", positive("Adam epsilon")),
                batch_size=key(64, "sequences per update (Table 2: 64)"),
                gamma=key(0.997, "(Table 2)"),
                nstep=key(5, "(Table 2)"),
                seq_len=key(80, "learning part of a sequence (Table 2: 80)",
                            count(1, "learned steps per sequence")),
                burn_in=key(40, "burn-in prefix (Table 2: 40)", count(0, "burn-in steps")),
                stride=key(40, "steps between sequence starts: overlap 40 (Table 2)",
                           count(1, "steps between sequence starts")),
                priority_eta=key(0.9, "priority mix η·max + (1−η)·mean (Table 2: 0.9)",
                                 unit("weight of the max in the priority mix")),
                double_q=key(True, "online net picks the bootstrap action, target net values it"),
                target_update_freq=key(2500, "hard target copy every N updates (Table 2: 2500)"),
                tau=key(None, "or Polyak averaging every update when set"),
                value_rescale=key(True, "h(x) = sign(x)(√(|x|+1) − 1) + εx (the paper)"),
                rescale_eps=key(1e-3, "ε of h (the paper)", non_negative("ε of h")),
                grad_clip=key(40.0, "max grad norm (Ape-X's 40; None: no clipping)"),
                huber=key(False, "squared TD error as the paper; True: Huber"),
            ),
            collect=dict(device=key("cpu", "where the acting copy lives")),
        )

    def __init__(self, cfg: Mapping | None, obs_space: gym.Space, action_space: gym.Space) -> None:
        super().__init__(cfg, obs_space, action_space)
        c = self.cfg
        self._check_cfg()
        self.device = resolve_device(c.device)
        self.collect_device = resolve_device(c.collect.device)
        self.n_actions = int(action_space.n)
        self.action_offset = int(action_space.start)
        m = c.model
        with torch.random.fork_rng(devices=[]):
            if c.seed is not None:
                torch.manual_seed(c.seed)
            self.online = RecurrentQNetwork(obs_space, self.n_actions, m.hidden, m.core_size,
                                            m.kind, m.dueling, encoders=m.encoders)
        self.online.to(self.device)
        self.target = _flat_copy(self.online)
        self.acting = copy.deepcopy(self.online).to(self.collect_device).requires_grad_(False)
        self._params = list(self.online.parameters())
        self.optimizer = adam(self._params, c.learn.lr, self.device, eps=c.learn.adam_eps)
        self._rng = numpy_rng(c.seed)
        self._lock = threading.Lock()

    def _check_cfg(self) -> None:
        learn = self.cfg.learn
        for key in ("nstep", "seq_len", "stride", "target_update_freq", "batch_size"):
            if learn[key] is None or learn[key] < 1:
                raise ValueError(f"policy.learn.{key} must be an int >= 1, got {learn[key]!r}")
        if learn.burn_in is None or learn.burn_in < 0:
            raise ValueError(f"policy.learn.burn_in must be >= 0, got {learn.burn_in!r}")
        if learn.tau is not None and not 0.0 < learn.tau <= 1.0:
            raise ValueError(f"policy.learn.tau must be in (0, 1] or None, got {learn.tau}")
        if self.cfg.model.kind not in ("lstm", "gru"):
            raise ValueError(f"policy.model.kind must be 'lstm' or 'gru', got {self.cfg.model.kind!r}")

    # --- state of the recurrent API --------------------------------------------------------------
    def initial_state(self, n: int) -> Dict[str, np.ndarray]:
        return {k: v.detach().cpu().numpy().astype(np.float32)
                for k, v in self.online.initial_state(n).items()}

    def _step(self, net: RecurrentQNetwork, device: torch.device, obs: Any, state: Mapping,
              first: Any) -> tuple:
        obs = obs if isinstance(obs, (np.ndarray, Mapping)) else np.asarray(obs)
        n = batch_rows(obs)
        first_t = torch.as_tensor(np.zeros(n, bool) if first is None else np.asarray(first, bool),
                                  device=device)
        state_t = {k: torch.as_tensor(np.asarray(v), device=device) for k, v in state.items()}
        with torch.inference_mode():
            q, new = net.step(obs_as_tensor(obs, device), state_t, first_t)
        return q.cpu().numpy(), {k: v.cpu().numpy() for k, v in new.items()}

    # --- collect: epsilon-greedy on the acting copy ---------------------------------------------
    def _forward_collect(self, obs: Any, state: Mapping, first: Any = None,
                         eps: float = 0.0) -> Dict[str, Any]:
        q, new = self._step(self.acting, self.collect_device, obs, state, first)
        action = masked_argmax(q, None)
        if eps > 0.0:
            explore = self._rng.random(action.shape[0]) < eps
            action = np.where(explore, self._rng.integers(self.n_actions, size=action.shape[0]),
                              action)
        return {"action": action + self.action_offset, "state": new}

    def _refresh(self) -> None:
        with self._lock:
            hard_update(self.acting, self.online)

    # --- eval: greedy on the online network ------------------------------------------------------
    def _forward_eval(self, obs: Any, state: Mapping, first: Any = None) -> Dict[str, Any]:
        with self._lock:
            q, new = self._step(self.online, self.device, obs, state, first)
        return {"action": masked_argmax(q, None) + self.action_offset, "state": new}

    # --- learn: one update on a batch of sequences ----------------------------------------------
    def _forward_learn(self, batch: Mapping[str, Any]) -> Dict[str, Any]:
        c = self.cfg.learn
        missing = [k for k in _SEQ_KEYS if k not in batch]
        if missing:
            raise KeyError(f"R2D2 learn batch lacks {missing} (it has {sorted(batch)}); feed "
                           "sequences from a SequenceReplayBuffer (rlpipe.data)")
        b = {k: obs_as_tensor(batch[k], self.device) for k in _SEQ_KEYS}
        burn = int(batch.get("burn_in", c.burn_in))
        length = b["mask"].shape[1]
        if not 0 <= burn < length:
            raise ValueError(f"R2D2: burn_in {burn} leaves no step to learn from in sequences of "
                             f"{length} steps; sequences must be longer than burn_in")
        mask = b["mask"].bool()
        x = append_last_next(b["obs"], b["next_obs"], mask.sum(1) - 1)  # [B, L + 1, ...]
        first = F.pad(b["first"].bool(), (0, 1))
        state = {k: v.float() for k, v in b["state"].items()}

        with torch.no_grad():
            q_target, _ = self.target(x, state, first)  # burn-in included: warms its state up
            warm = state
            if burn:  # CRUCIAL: the burn-in only warms the online state up, no gradient
                _, warm = self.online(time_slice(x, 0, burn), state, first[:, :burn])
        q_online, _ = self.online(time_slice(x, burn), warm, first[:, burn:])  # [B, L+1-burn, A]

        with torch.no_grad():
            q_next = q_target[:, burn:]
            chooser = q_online.detach() if c.double_q else q_next
            boot = q_next.gather(2, chooser.argmax(2, keepdim=True)).squeeze(2)
            target = sequence_nstep_targets(
                b["reward"][:, burn:], b["terminated"][:, burn:], mask[:, burn:], boot, c.gamma,
                c.nstep, c.rescale_eps if c.value_rescale else None)

        action = b["action"][:, burn:].long().unsqueeze(2) - self.action_offset
        q = q_online[:, :-1].gather(2, action).squeeze(2)  # [B, seq_len]
        loss_fn = F.smooth_l1_loss if c.huber else F.mse_loss
        valid = mask[:, burn:].float()
        per_step = loss_fn(q, target, reduction="none") * valid
        per_seq = per_step.sum(1) / valid.sum(1).clamp(min=1.0)
        weight = batch.get("weight")
        if weight is not None:
            per_seq = per_seq * torch.as_tensor(weight, device=self.device).float()
        loss = per_seq.mean()

        grad_norm = grad_step(self.optimizer, loss, self._params, c.grad_clip, norm=True)
        with self._lock:
            self.optimizer.step()
            self.train_iter += 1
            if c.tau is not None:
                soft_update(self.target, self.online, c.tau)
            elif self.train_iter % c.target_update_freq == 0:
                hard_update(self.target, self.online)

        td = ((q.detach() - target) * valid).abs()
        n_valid = valid.sum().clamp(min=1.0)
        values = torch.stack([loss.detach(), (q.detach() * valid).sum() / n_valid,
                              (target * valid).sum() / n_valid, td.sum() / n_valid,
                              grad_norm.detach().float()]).tolist()
        stats: Dict[str, Any] = dict(zip(("loss", "q_mean", "target_mean", "td_abs_mean",
                                          "grad_norm"), values))
        if weight is not None:
            stats["priority"] = td.cpu().numpy()  # [B, seq_len]; padding 0 (the buffer masks it)
        return stats

    # --- state: DQN's (the three networks, optimizer, train_iter, RNG) -------------------------
    def state_dict(self) -> Dict[str, Any]:
        with self._lock:
            return learner_state(self, _MODULES)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        check_learner_state(self, state, _MODULES)
        with self._lock:
            load_learner_state(self, state, _MODULES)


def _flat_copy(net: torch.nn.Module) -> torch.nn.Module:
    """A frozen copy of `net` on its device whose recurrent cores keep their weights in one
    block: a deep copy of a cuDNN LSTM's weights is not the single block cuDNN reads, and would
    be copied into one on every call (with a warning each time)."""
    copied = copy.deepcopy(net).requires_grad_(False)
    for module in copied.modules():
        if isinstance(module, torch.nn.RNNBase):
            module.flatten_parameters()
    return copied
