"""Discrete Conservative Q-Learning (Kumar et al. 2020, "Conservative Q-Learning for Offline
Reinforcement Learning", the variant of its Atari experiments, here on DQN instead of QR-DQN).

DQN's update (dqn.py: double-Q TD target, Huber loss, target network) with one term added:

  loss = TD loss + α · mean_s ( logsumexp_a Q(s, a) − Q(s, a_data) ),

the CQL(H) regulariser: logsumexp is a soft maximum over the actions, so the term pushes Q down
on every action in proportion to exp Q (the ones a greedy policy would pick) and up on the action
the data set took. Q then stays low on actions the data never tried, where an offline learner
would otherwise overestimate them. When the batch carries `action_mask` (masked envs), the
logsumexp runs over the valid actions of each state only.

Acting is DQN's (ε-greedy collect face, greedy eval face), so the same policy can be trained
online afterwards (offline-to-online fine-tuning) by the off-policy pipeline.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

import torch

from rlpipe.schema import extend, key

from .dqn import DQNPolicy

__all__ = ["DiscreteCQLPolicy", "conservative_gap"]


def conservative_gap(q_all: torch.Tensor, q_data: torch.Tensor,
                     mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Per row: logsumexp_a Q(s, a) − Q(s, a_data); with a bool `mask` [B, n_actions], the
    logsumexp runs over the valid actions only (an invalid action adds exp(−inf) = 0)."""
    if mask is not None:
        q_all = q_all.masked_fill(~mask.bool(), float("-inf"))
    return torch.logsumexp(q_all, dim=1) - q_data


class DiscreteCQLPolicy(DQNPolicy):
    """CQL(H) for Discrete actions: DQN plus α · (logsumexp_a Q(s, a) − Q(s, a_data))."""

    pipeline = "offline"  # trained from a data set; the off-policy pipeline can fine-tune it
    learn_stats = DQNPolicy.learn_stats + ("cql_gap",)
    space_hint = ("Discrete CQL picks one of finitely many actions; for continuous control use "
                  "CQL (get_policy('cql')).")

    @classmethod
    def config_keys(cls) -> Dict[str, Any]:
        return extend(super().config_keys(), dict(
            learn=dict(
                cql_alpha=key(1.0, "α, weight of the conservative term (d3rlpy's DiscreteCQL)"),
            ),
        ))

    def _check_cfg(self) -> None:
        super()._check_cfg()
        alpha = self.cfg.learn.cql_alpha
        if alpha is None or not alpha >= 0.0:
            raise ValueError(f"policy.learn.cql_alpha must be a number >= 0, got {alpha!r} "
                             "(0 turns the conservative term off: plain DQN).")

    def _regulariser(self, b: Mapping[str, torch.Tensor], q_all: torch.Tensor,
                     q: torch.Tensor) -> Tuple[Optional[torch.Tensor], Dict[str, torch.Tensor]]:
        gap = conservative_gap(q_all, q, b.get("action_mask")).mean()
        return self.cfg.learn.cql_alpha * gap, {"cql_gap": gap}
