"""Generalised advantage estimation (Schulman et al., 2016) with terminated/truncated ends."""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np


def compute_gae(rewards: Any, values: Any, next_values: Any, terminated: Any, truncated: Any,
                gamma: float, lam: float, valid: Optional[Any] = None) -> Tuple[np.ndarray, np.ndarray]:
    """GAE(lambda) advantages and returns over a rollout of T steps (arrays [T] or [T, N, ...];
    trailing dims such as an agent axis [T, N, A] are independent rows).

    - `values[t]` = V(obs_t); `next_values[t]` = V(true next obs of step t). For a truncated
      step that is the value of the true final observation, not of the next episode's first.
    - delta_t = r_t + gamma * (1 - terminated_t) * next_values_t - values_t: a terminated step
      does not bootstrap; a truncated one does.
    - A_t = delta_t + gamma * lam * (1 - done_t) * A_{t+1}, done = terminated or truncated:
      an episode end cuts the recursion (the next row belongs to another episode).
    - `valid` (optional bool mask): rows with False are not transitions; their advantage is 0
      and they cut the recursion of the step before them.

    Returns `(advantages, returns)` as float32, with returns = advantages + values.
    """
    r = np.asarray(rewards, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    nv = np.asarray(next_values, dtype=np.float64)
    term = np.asarray(terminated, dtype=bool)
    done = term | np.asarray(truncated, dtype=bool)
    shapes = {"rewards": r.shape, "values": v.shape, "next_values": nv.shape,
              "terminated": term.shape, "truncated": done.shape}
    if len(set(shapes.values())) != 1:
        raise ValueError(f"compute_gae: all inputs need the same shape [T] or [T, N, ...], got {shapes}")
    ok = np.ones(r.shape, bool) if valid is None else np.asarray(valid, dtype=bool)
    if ok.shape != r.shape:
        raise ValueError(f"compute_gae: valid has shape {ok.shape}, expected {r.shape}")
    delta = np.where(ok, r + gamma * np.where(term, 0.0, nv) - v, 0.0)
    carry = gamma * lam * ~done
    adv = np.zeros_like(delta)
    last = np.zeros(r.shape[1:])
    for t in range(r.shape[0] - 1, -1, -1):
        last = np.where(ok[t], delta[t] + carry[t] * last, 0.0)
        adv[t] = last
    return adv.astype(np.float32), (adv + v).astype(np.float32)
